import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { CtsError } from "../../src/errors/cts-error.ts";
import { commandFailure } from "../../src/terraform/failures.ts";
import { waitOutStateLocks, type StateLockWait } from "../../src/terraform/lock-wait.ts";
import { stateLockWaitLine } from "../../src/daemon/driver-setup.ts";

// What tofu prints when a paused member's apply still holds the task's lock in Consul.
const LOCKED = `Error: Error acquiring the state lock

Error message: failed to lock state in Consul: Lock Info:
  ID:        9a4c7c0e-1111-2222-3333-444455556666
  Path:      consul-terraform-sync/terraform-env:web
  Operation: OperationTypeApply
  Who:       cts@member-a
  Version:   1.12.6
  Created:   2026-11-23 12:00:00.000000000 +0000 UTC
  Info:      consul session: 1234`;

const locked = (raw = LOCKED) => commandFailure("web", { command: "tofu apply", exitCode: 1, errors: "Error acquiring the state lock", hint: "" }, raw, 90_000);

/** A fake clock the fake pause advances: no real waiting. */
function fakeTime() {
  let t = 0;
  const pauses: number[] = [];
  return { now: () => t, pause: async (ms: number) => void (pauses.push(ms), (t += ms)), pauses };
}

describe("waiting for a state lock someone else holds", () => {
  it("says once, when the wait starts, who holds the lock and how long it waits; then runs the command again", async () => {
    const time = fakeTime();
    const waits: StateLockWait[] = [];
    const later: string[] = [];
    let attempts = 0;
    const result = await waitOutStateLocks(
      async () => {
        if (++attempts <= 3) throw locked();
        return "applied";
      },
      { task: "web", timeoutMs: 90_000, ...time, onWait: (w) => waits.push(w), onStillLocked: (l) => later.push(l) },
    );
    assert.equal(result, "applied");
    assert.equal(attempts, 4);
    assert.deepEqual(time.pauses, [1_000, 2_000, 4_000]);
    assert.equal(waits.length, 1, "one line when the waiting starts, not one per attempt");
    assert.deepEqual(waits[0], {
      task: "web",
      command: "tofu apply",
      waitMs: 90_000,
      lock: {
        ID: "9a4c7c0e-1111-2222-3333-444455556666",
        Path: "consul-terraform-sync/terraform-env:web",
        Operation: "OperationTypeApply",
        Who: "cts@member-a",
        Version: "1.12.6",
        Created: "2026-11-23 12:00:00.000000000 +0000 UTC",
        Info: "consul session: 1234",
      },
    });
    assert.deepEqual(later, ["the state is still locked by cts@member-a; trying again in 2s", "the state is still locked by cts@member-a; trying again in 4s"]);
  });

  it("logs the warning with the task, the holder's ID, Who, Operation and Created, and both limits", () => {
    const line = stateLockWaitLine(
      { task: "web", command: "tofu apply", waitMs: 90_000, lock: { ID: "9a4c", Who: "cts@member-a", Operation: "OperationTypeApply", Created: "2026-11-23 12:00:00 +0000 UTC" } },
      5 * 60_000,
    );
    assert.equal(
      line,
      "task 'web': waiting for the Terraform state lock held by cts@member-a (ID 9a4c, OperationTypeApply, created 2026-11-23 12:00:00 +0000 UTC): " +
        "`tofu apply` waits up to 1m30s for it, then the run is retried for up to 5m. Nothing is applied for the task until the holder releases it.",
    );
    assert.match(stateLockWaitLine({ task: "web", command: "tofu plan", waitMs: 30_000 }), /^task 'web': waiting for the Terraform state lock held by another Terraform \(it printed no Lock Info\): `tofu plan` waits up to 30s for it\. /);
  });

  it("gives up with TERRAFORM_STATE_LOCKED at the lock timeout, and says nothing when it never waited", async () => {
    const time = fakeTime();
    const waits: StateLockWait[] = [];
    await assert.rejects(
      waitOutStateLocks(async () => Promise.reject(locked()), { task: "web", timeoutMs: 10_000, ...time, onWait: (w) => waits.push(w) }),
      (err: CtsError) => err.code === "TERRAFORM_STATE_LOCKED",
    );
    assert.deepEqual(time.pauses, [1_000, 2_000, 4_000], "the next pause would pass the timeout");
    assert.equal(waits.length, 1);
    const none: StateLockWait[] = [];
    await assert.rejects(waitOutStateLocks(async () => Promise.reject(locked()), { task: "web", timeoutMs: 0, ...fakeTime(), onWait: (w) => none.push(w) }), /state lock/);
    assert.deepEqual(none, []);
  });

  it("does not wait on other failures", async () => {
    const waits: StateLockWait[] = [];
    const failed = new CtsError("TERRAFORM_FAILED", "external", "Unsupported argument", { task: "web" });
    await assert.rejects(waitOutStateLocks(async () => Promise.reject(failed), { task: "web", timeoutMs: 90_000, ...fakeTime(), onWait: (w) => waits.push(w) }), /Unsupported argument/);
    assert.deepEqual(waits, []);
  });
});
