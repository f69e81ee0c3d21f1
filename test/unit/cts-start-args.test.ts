import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { normalizeStartArgs } from "../../src/cli/start-args.ts";
import { unquoteHcl1Names } from "../../src/cts/config/files.ts";

const argv = (...a: string[]) => ["node", "cts", ...a];

describe("CTS's start command line", () => {
  it("accepts CTS's one-dash flags, repeated, with a space or '='", () => {
    assert.deepEqual(
      normalizeStartArgs(argv("start", "-config-file", "a.hcl", "-config-file=b.json", "-config-dir", "d", "-once", "-inspect-task", "t", "-reset-storage")),
      argv("start", "--config-file", "a.hcl", "--config-file=b.json", "--config-dir", "d", "--once", "--inspect-task", "t", "--reset-storage"),
    );
  });

  it("keeps two-dash flags and values that start with a dash", () => {
    assert.deepEqual(normalizeStartArgs(argv("start", "--config-dir", "d", "--inspect")), argv("start", "--config-dir", "d", "--inspect"));
    assert.deepEqual(normalizeStartArgs(argv("start", "-config-file", "-x.hcl")), argv("start", "--config-file", "-x.hcl"));
  });

  it("treats a bare `cts -config-file x` as start, as CTS's deprecated form does", () => {
    assert.deepEqual(normalizeStartArgs(argv("-config-file", "a.hcl", "-once")), argv("start", "--config-file", "a.hcl", "--once"));
  });

  it("leaves other commands alone", () => {
    assert.deepEqual(normalizeStartArgs(argv("task", "enable", "-auto-approve", "x")), argv("task", "enable", "-auto-approve", "x"));
  });
});

describe("HCL 1 names in CTS files", () => {
  it("unquotes a quoted attribute name (task_env in CTS's docs) but not inside a heredoc", () => {
    const text = 'task_env {\n  "AWS_KEY" = "v"\n}\nx = <<EOT\n"keep" = 1\nEOT\n';
    assert.equal(unquoteHcl1Names(text), 'task_env {\n  AWS_KEY = "v"\n}\nx = <<EOT\n"keep" = 1\nEOT\n');
  });
});
