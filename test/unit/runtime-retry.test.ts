import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { createController } from "../../src/daemon/compose.ts";
import { CtsError } from "../../src/errors/cts-error.ts";
import { createLogger } from "../../src/log/logger.ts";
import { inProcessSynthesizer } from "../../src/synth/synthesizer.ts";
import { DEFAULT_RETRY_POLICY, nextDelay, TERRAFORM_HUNG, TERRAFORM_STATE_LOCKED, type RetryHistory } from "../../src/runtime/retry.ts";
import type { RetryNotice } from "../../src/runtime/interfaces.ts";
import type { RunOptions, RunResult } from "../../src/terraform/types.ts";
import { MemberList } from "../fixtures/tasks.ts";
import { fakeClock, type FakeClock } from "../support/fake-clock.ts";

const ok: RunResult = { changesPresent: true, summary: { add: 1, change: 0, destroy: 0 }, output: "" };
const locked = () => new CtsError(TERRAFORM_STATE_LOCKED, "external", "the state is locked by another Terraform", { task: "members" });

/**
 * A controller in `once` mode (no watcher) whose driver fails as `fail(attempt)` says. Its retry
 * waits run on a fake clock that moves to each wait's end at once (unless the test passes its own).
 */
function setup(fail: (attempt: number) => CtsError | undefined, opts: { retries?: number; lockWaitMs?: number; delayMs?: number; clock?: FakeClock } = {}) {
  const clock = opts.clock ?? fakeClock({ autoAdvance: true });
  const task = new MemberList("members", "/tmp/m.txt");
  const attempts: number[] = [];
  const notices: RetryNotice[] = [];
  const driver = {
    taskDir: (t: string) => `/nonexistent/${t}`,
    async apply(_ws: unknown, o: RunOptions = {}) {
      attempts.push(attempts.length + 1);
      const err = fail(attempts.length);
      if (err) throw err;
      if (o.signal?.aborted) throw new CtsError("TERRAFORM_CANCELLED", "external", "cancelled");
      return ok;
    },
    plan: async () => ok,
    destroy: async () => ok,
  };
  const controller = createController({
    loaded: { config: { tasks: [task] }, file: "/x/cts.config.ts", dir: "/x" },
    reader: { read: async () => [] as never },
    driver,
    synthesizer: inProcessSynthesizer(() => task),
    log: createLogger({ write: () => {} }),
    retries: opts.retries ?? 0,
    retryDelayMs: opts.delayMs ?? 5,
    ...(opts.lockWaitMs !== undefined ? { lockWaitMs: opts.lockWaitMs } : {}),
    clock,
  });
  let retried!: () => void;
  const firstRetry = new Promise<void>((r) => (retried = r));
  controller.onRetry((n) => {
    notices.push(n);
    retried();
  });
  return { controller, attempts, notices, firstRetry, clock };
}

describe("retry policy", () => {
  it("waits out a locked Terraform state, even with no retries for failures, and then applies", async () => {
    const { controller, attempts, notices } = setup((n) => (n <= 3 ? locked() : undefined));
    const [outcome] = await controller.once();
    assert.equal(outcome!.outcome, "applied");
    assert.equal(attempts.length, 4);
    assert.deepEqual(notices.map((n) => n.code), [TERRAFORM_STATE_LOCKED, TERRAFORM_STATE_LOCKED, TERRAFORM_STATE_LOCKED]);
    assert.ok(notices[2]!.delayMs > notices[0]!.delayMs, "the wait backs off");
    await controller.stop(100);
  });

  it("gives up on a lock that outlives its bound, with the lock's own error", async () => {
    const { controller, attempts, clock } = setup(() => locked(), { lockWaitMs: 60 });
    const [outcome] = await controller.once();
    assert.equal(outcome!.outcome, "failed");
    assert.equal(outcome!.error!.code, TERRAFORM_STATE_LOCKED);
    // Waits of 5, 10 and 20 ms (±20 %) fit in 60 ms; the next one (40 ms) would pass the bound.
    assert.equal(attempts.length, 4, "it tried again while the bound allowed, then gave up");
    assert.ok(clock.now() < 60, `gave up after ${clock.now()} ms of the fake clock, before the bound`);
    await controller.stop(100);
  });

  it("retries a hung Terraform exactly once", async () => {
    const { controller, attempts } = setup(() => new CtsError(TERRAFORM_HUNG, "external", "no progress"));
    const [outcome] = await controller.once();
    assert.equal(outcome!.error!.code, TERRAFORM_HUNG);
    assert.equal(attempts.length, 2);
    await controller.stop(100);
  });

  it("retries a failed apply as often as configured (CTS: twice)", async () => {
    const { controller, attempts } = setup(() => new CtsError("TERRAFORM_FAILED", "external", "apply failed"), { retries: 2 });
    const [outcome] = await controller.once();
    assert.equal(outcome!.outcome, "failed");
    assert.equal(attempts.length, 3);
    await controller.stop(100);
  });

  it("new data ends a retry's wait: the run attempts at once instead of on the backoff schedule", async () => {
    // A clock that never moves: the hour-long backoff could end only by the new data.
    const clock = fakeClock();
    const { controller, attempts, firstRetry } = setup((n) => (n === 1 ? new CtsError("TERRAFORM_FAILED", "external", "Consul's backend was unreachable", { task: "members" }) : undefined), {
      retries: 1,
      delayMs: 60 * 60_000,
      clock,
    });
    const outcome = controller.runNow("members");
    await firstRetry;
    const before = clock.now();
    void controller.runNow("members");
    const r = await outcome;
    assert.equal(r.outcome, "applied");
    assert.equal(attempts.length, 2);
    assert.equal(clock.now(), before, "no backoff time passed");
    await controller.idle();
    await controller.stop(100);
  });

  it("stops waiting for a lock when the runtime pauses (a follower never retries)", async () => {
    // A clock that never moves: the hour-long wait ends only by the pause.
    const { controller, attempts, notices, firstRetry } = setup(() => locked(), { lockWaitMs: 60 * 60_000, delayMs: 60 * 60_000, clock: fakeClock() });
    const outcome = controller.runNow("members");
    await firstRetry;
    assert.equal(notices.length, 1);
    await controller.pause(60_000);
    const r = await outcome;
    assert.equal(r.outcome, "cancelled");
    const tried = attempts.length;
    await controller.idle();
    assert.equal(attempts.length, tried, "no attempt after the pause");
    await controller.stop(100);
  });
});

describe("nextDelay", () => {
  const fresh = (): RetryHistory => ({ failed: 0, locked: 0, hung: 0 });
  it("doubles the delay of failed applies and stops after `retries`", () => {
    const h = fresh();
    const policy = { ...DEFAULT_RETRY_POLICY, retries: 2, delayMs: 1000 };
    const failed = new CtsError("TERRAFORM_FAILED", "external", "x");
    const first = nextDelay(policy, failed, h, true)!;
    const second = nextDelay(policy, failed, h, true)!;
    assert.ok(first >= 800 && first <= 1200);
    assert.ok(second >= 1600 && second <= 2400);
    assert.equal(nextDelay(policy, failed, h, true), undefined);
  });

  it("never retries usage errors, cancellations, or a failed plan", () => {
    const policy = DEFAULT_RETRY_POLICY;
    assert.equal(nextDelay(policy, new CtsError("TASK_INVALID", "usage", "x"), fresh(), true), undefined);
    assert.equal(nextDelay(policy, new CtsError("TERRAFORM_CANCELLED", "external", "x"), fresh(), true), undefined);
    assert.equal(nextDelay(policy, new CtsError("TERRAFORM_FAILED", "external", "x"), fresh(), false), undefined);
    assert.notEqual(nextDelay(policy, locked(), fresh(), false), undefined, "a plan waits for a lock too");
  });
});
