import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CtsError } from "../../src/errors/cts-error.ts";
import { outsideOf, shownObjects, stateObjects } from "../../src/driver/state-objects.ts";
import { stateNotSavedError, stateNotSavedSign, takeErroredState } from "../../src/terraform/state-save.ts";
import { UnsavedStates } from "../../src/runtime/unsaved-state.ts";
import { createLogger } from "../../src/log/logger.ts";
import { noMetrics, type Metrics } from "../../src/metrics/metrics.ts";

const STATE = JSON.stringify({
  version: 4,
  serial: 3,
  lineage: "l",
  resources: [
    { mode: "managed", type: "terraform_data", name: "slow", instances: [{ attributes: { id: "a-1" } }] },
    { mode: "data", type: "local_file", name: "in", instances: [{ attributes: { id: "d" } }] },
    { module: "module.m", mode: "managed", type: "local_file", name: "f", instances: [{ index_key: 0, attributes: { id: "f-0" } }, { index_key: "x", attributes: { id: "f-x" } }] },
  ],
});

describe("reading what a state holds", () => {
  it("lists the managed objects of a state by address and id, data sources left out", () => {
    assert.deepEqual(stateObjects(STATE), [
      { address: "terraform_data.slow", id: "a-1" },
      { address: 'module.m.local_file.f[0]', id: "f-0" },
      { address: 'module.m.local_file.f["x"]', id: "f-x" },
    ]);
    assert.equal(stateObjects("not json"), undefined);
  });

  it("lists the managed objects of `show -json`, child modules included", () => {
    const shown = JSON.stringify({
      values: {
        root_module: {
          resources: [{ address: "terraform_data.slow", mode: "managed", values: { id: "b-2" } }, { address: "data.x.y", mode: "data", values: { id: "z" } }],
          child_modules: [{ resources: [{ address: "module.m.local_file.f[0]", mode: "managed", values: { id: "f-0" } }] }],
        },
      },
    });
    assert.deepEqual(shownObjects(shown), [
      { address: "terraform_data.slow", id: "b-2" },
      { address: "module.m.local_file.f[0]", id: "f-0" },
    ]);
    assert.deepEqual(shownObjects("{}"), [], "no state: nothing");
  });

  it("finds what one list made that the other does not hold, by address and id (a replaced object is outside)", () => {
    const made = [{ address: "terraform_data.slow", id: "a-1" }, { address: "local_file.f", id: "same" }];
    assert.deepEqual(outsideOf(made, [{ address: "terraform_data.slow", id: "b-2" }, { address: "local_file.f", id: "same" }]), [{ address: "terraform_data.slow", id: "a-1" }]);
  });
});

describe("an apply whose state was not saved", () => {
  it("is told by what Terraform prints, and by nothing else", () => {
    for (const line of [
      "Error: Failed to save state",
      "Error saving state: consul CAS failed with transaction errors: 1 error occurred: * failed to set key, index is stale",
      "Error: Failed to persist state to backend",
      "[ERROR] consul lock was lost",
      "Error releasing the state lock",
    ])
      assert.ok(stateNotSavedSign(line), line);
    assert.equal(stateNotSavedSign("Apply complete! Resources: 2 added, 0 changed, 0 destroyed."), undefined);
  });

  it("moves errored.tfstate aside and names its objects in TERRAFORM_STATE_NOT_SAVED", () => {
    const dir = mkdtempSync(join(tmpdir(), "cts-errored-"));
    try {
      writeFileSync(join(dir, "errored.tfstate"), STATE);
      const left = takeErroredState(dir, "web", new Date("2026-11-28T05:00:00.000Z"))!;
      assert.deepEqual(readdirSync(dir), ["errored-2026-11-28T05-00-00-000Z.tfstate"]);
      assert.equal(left.objects.length, 3);
      const err = stateNotSavedError("web", { command: "tofu apply", sign: "Failed to save state", errors: "…", left });
      assert.equal(err.code, "TERRAFORM_STATE_NOT_SAVED");
      assert.match(err.message, /could not save its state or lost its state lock \("Failed to save state"\)/);
      assert.match(err.message, /terraform_data\.slow \(id a-1\)/);
      assert.match(err.message, /errored-2026-11-28T05-00-00-000Z\.tfstate/);
      assert.equal(takeErroredState(dir, "web"), undefined, "none left: nothing to take");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("is remembered until the next apply, which reports what is outside the saved state (log, metrics)", async () => {
    const lines: string[] = [];
    const counted: string[] = [];
    const metrics: Metrics = { ...noMetrics, stateNotSaved: (t) => void counted.push(`not-saved ${t}`), objectsOutsideState: (t, n) => void counted.push(`outside ${t} ${n}`) };
    const unsaved = new UnsavedStates({ log: createLogger({ write: (l) => void lines.push(l), level: "info" }), metrics });
    unsaved.failed("web", new CtsError("TERRAFORM_FAILED", "external", "other"));
    assert.equal(unsaved.has("web"), false, "other failures are not this");
    const left = { objects: [{ address: "terraform_data.slow", id: "a-1" }, { address: "local_file.f", id: "same" }], file: "/w/errored-x.tfstate" };
    unsaved.failed("web", stateNotSavedError("web", { command: "tofu apply", sign: "Failed to save state", errors: "…", left }));
    assert.equal(unsaved.has("web"), true);
    const report = await unsaved.settle("web", async () => [{ address: "terraform_data.slow", id: "b-2" }, { address: "local_file.f", id: "same" }]);
    assert.deepEqual(report?.outside, [{ address: "terraform_data.slow", id: "a-1" }]);
    assert.equal(report?.checked, true);
    assert.deepEqual(counted, ["not-saved web", "outside web 1"]);
    assert.ok(lines.some((l) => l.includes("outside the saved state: terraform_data.slow (id a-1)")), lines.join("\n"));
    assert.equal(await unsaved.settle("web", async () => []), undefined, "reported once");
  });

  it("reports everything the failed apply made as possibly outside when the saved state cannot be read", async () => {
    const lines: string[] = [];
    const unsaved = new UnsavedStates({ log: createLogger({ write: (l) => void lines.push(l), level: "info" }) });
    unsaved.failed("web", stateNotSavedError("web", { command: "tofu apply", sign: "lock was lost", errors: "…", left: { objects: [{ address: "a.b", id: "1" }], file: "f" } }));
    const report = await unsaved.settle("web", undefined);
    assert.deepEqual(report, { error: report!.error, outside: [{ address: "a.b", id: "1" }], checked: false });
    assert.ok(lines.some((l) => l.includes("possibly outside the saved state")));
  });
});
