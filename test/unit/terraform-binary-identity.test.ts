import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { checkWorkingDirBinaries } from "../../src/doctor/local-checks.ts";
import { failedError, openTofuStateHint } from "../../src/terraform/failures.ts";
import { binaryReinitLine, initReason } from "../../src/terraform/initializer.ts";
import { parseIdentity } from "../../src/terraform/version.ts";
import { INIT_MARKER, initRecordText, readInitRecordSync } from "../../src/terraform/working-dir.ts";

describe("the binary that initialized a working dir", () => {
  it("is read from what `version` prints: OpenTofu or Terraform, and the version", () => {
    assert.deepEqual(parseIdentity("OpenTofu v1.12.6\non linux_amd64\n"), { kind: "tofu", version: "1.12.6" });
    assert.deepEqual(parseIdentity("Warning: Unable to open CLI configuration file\nTerraform v1.5.7\non linux_amd64"), { kind: "terraform", version: "1.5.7" });
    assert.deepEqual(parseIdentity("Terraform v1.6.0-beta1\n"), { kind: "terraform", version: "1.6.0-beta1" });
    assert.equal(parseIdentity("something else 1.2.3"), undefined);
  });

  it("is kept in the init record beside the init inputs' hash, and an old record (hash only) still reads", () => {
    const dir = mkdtempSync(join(tmpdir(), "cts-record-"));
    try {
      writeFileSync(join(dir, INIT_MARKER), initRecordText({ hash: "abc", binary: "tofu 1.12.6" }));
      assert.deepEqual(readInitRecordSync(dir), { hash: "abc", binary: "tofu 1.12.6" });
      writeFileSync(join(dir, INIT_MARKER), "abc\n");
      assert.deepEqual(readInitRecordSync(dir), { hash: "abc" });
      writeFileSync(join(dir, INIT_MARKER), "");
      assert.equal(readInitRecordSync(dir), undefined);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("decides init: same inputs and binary need none; another binary, or none recorded, needs one", () => {
    const rec = { hash: "h", binary: "tofu 1.12.6" };
    assert.equal(initReason(rec, "h", "tofu 1.12.6", true), undefined);
    assert.equal(initReason(undefined, "h", "tofu 1.12.6", true), "no record");
    assert.equal(initReason(rec, "other", "tofu 1.12.6", true), "inputs changed");
    assert.equal(initReason(rec, "h", "tofu 1.12.6", false), "no .terraform");
    assert.equal(initReason(rec, "h", "terraform 1.5.7", true), "binary changed");
    assert.equal(initReason(rec, "h", "tofu 1.13.0", true), "binary changed", "a new version of the same binary counts");
    assert.equal(initReason({ hash: "h" }, "h", "tofu 1.12.6", true), "binary not recorded");
    assert.equal(initReason({ hash: "h" }, "h", undefined, true), undefined, "a binary that did not answer decides nothing");
  });

  it("logs one line saying why only for the binary's reasons", () => {
    assert.match(binaryReinitLine("binary changed", { hash: "h", binary: "tofu 1.12.6" }, "terraform 1.5.7")!, /initialized by tofu 1\.12\.6 and this cts runs terraform 1\.5\.7/);
    assert.match(binaryReinitLine("binary not recorded", { hash: "h" }, "tofu 1.12.6")!, /does not say which binary/);
    assert.equal(binaryReinitLine("inputs changed", undefined, "tofu 1.12.6"), undefined);
  });

  it("Terraform on OpenTofu's state names the state command to run, not the plugin cache", () => {
    const errors = 'Failed to load plugin schemas: Could not load the schema for provider registry.opentofu.org/hashicorp/local: failed to instantiate provider "registry.opentofu.org/hashicorp/local" to obtain schema: unavailable provider "registry.opentofu.org/hashicorp/local".';
    const err = failedError("web", { command: "terraform plan", exitCode: 1, errors, hint: "fallback" });
    assert.match(err.message, /`terraform state replace-provider -auto-approve registry\.opentofu\.org\/hashicorp\/local registry\.terraform\.io\/hashicorp\/local`/);
    assert.doesNotMatch(err.message, /plugin cache/);
    assert.equal(openTofuStateHint("tofu plan", errors), undefined, "tofu itself installs registry.opentofu.org providers");
  });

  it("doctor names each dir another binary made, with the fix; dirs of the configured binary pass", () => {
    const root = mkdtempSync(join(tmpdir(), "cts-doctor-dirs-"));
    try {
      const dirs = ["a", "b", "c"].map((task) => ({ task, dir: join(root, task) }));
      const write = (d: { dir: string }, binary?: string) => {
        rmSync(d.dir, { recursive: true, force: true });
        mkdirSync(d.dir, { recursive: true });
        writeFileSync(join(d.dir, INIT_MARKER), initRecordText(binary ? { hash: "h", binary } : { hash: "h" }));
      };
      write(dirs[0]!, "tofu 1.12.6");
      write(dirs[1]!, "tofu 1.12.6");
      const ok = checkWorkingDirBinaries(dirs, "tofu 1.12.6", "tofu");
      assert.equal(ok.ok, true);
      assert.match(ok.detail, /2 initialized working dirs, all by tofu 1\.12\.6/);
      write(dirs[1]!, "terraform 1.5.7");
      write(dirs[2]!);
      const bad = checkWorkingDirBinaries(dirs, "tofu 1.12.6", "tofu");
      assert.equal(bad.ok, false);
      assert.match(bad.detail, new RegExp(`${join(root, "b")} \\(task 'b': initialized by terraform 1\\.5\\.7\\)`));
      assert.doesNotMatch(bad.detail, /task 'a'/);
      assert.match(bad.fix!, /run 'tofu init -upgrade -input=false' in each dir/);
      const toTerraform = checkWorkingDirBinaries(dirs.slice(0, 1), "terraform 1.5.7", "terraform");
      assert.match(toTerraform.fix!, /state replace-provider/);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});

