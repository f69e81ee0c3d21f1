import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createGroupFile, parseGroupFile } from "../../src/terraform/group-file.ts";

const read = (path: string) => parseGroupFile(readFileSync(path, "utf8"));

describe("the process-group record of a driver", () => {
  it("is rewritten in place: a shorter record is padded and still parses, with the file's mode 0640", () => {
    const root = mkdtempSync(join(tmpdir(), "cts-groups-"));
    try {
      const file = createGroupFile(root);
      file.add({ pgid: 4242, task: "web", command: "tofu apply" });
      file.add({ pgid: 4343, task: "db", command: "tofu plan" });
      assert.deepEqual(read(file.path)?.groups.map((g) => g.pgid), [4242, 4343]);
      file.remove(4343);
      assert.deepEqual(read(file.path)?.groups.map((g) => g.pgid), [4242]);
      assert.match(readFileSync(file.path, "utf8"), /\} +$/, "the longer record's tail is blanked, not left behind");
      assert.equal(statSync(file.path).mode & 0o777, 0o640);
      file.remove(4242);
      assert.deepEqual(read(file.path)?.groups, [], "an idle driver's record lists no groups");
      file.close();
      assert.equal(existsSync(file.path), false, "close removes the record when nothing runs");
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  it("is written again when its folder was removed meanwhile", () => {
    const root = mkdtempSync(join(tmpdir(), "cts-groups-"));
    try {
      const file = createGroupFile(root);
      file.add({ pgid: 4242, task: "web", command: "tofu apply" });
      rmSync(join(root, ".cts-processes"), { recursive: true, force: true });
      file.add({ pgid: 4343, task: "db", command: "tofu plan" });
      assert.deepEqual(read(file.path)?.groups.map((g) => g.pgid), [4242, 4343]);
      file.close();
      assert.equal(existsSync(file.path), true, "a record with live groups stays for the reaper");
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
