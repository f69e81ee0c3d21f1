import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { createController } from "../../src/daemon/compose.ts";
import { driftSettings } from "../../src/runtime/drift.ts";
import { driftCheckProblems } from "../../src/task/validate.ts";
import { createLogger } from "../../src/log/logger.ts";
import { inProcessSynthesizer } from "../../src/synth/synthesizer.ts";
import { fakeWatcher } from "../support/fake-watcher.ts";
import type { RunResult, TaskWorkspace } from "../../src/terraform/types.ts";
import type { DriftCheckOption } from "../../src/task/task.ts";
import { MemberList } from "../fixtures/tasks.ts";
import { fakeClock, type FakeClock } from "../support/fake-clock.ts";
import { counter, settled } from "../support/waits.ts";


/** A driver that records what it was asked, in order; plans find drift when told to. */
function fakeDriver() {
  const calls: string[] = [];
  /** Applies that began (a held one waits at the gate). */
  const applies = counter();
  let gate: Promise<void> = Promise.resolve();
  let drifted = false;
  let applying = false;
  const result = (changesPresent: boolean): RunResult => ({ changesPresent, summary: { add: changesPresent ? 1 : 0, change: 0, destroy: 0 }, output: changesPresent ? "+ local_file.members" : "" });
  return {
    calls,
    applies,
    hold() {
      let release!: () => void;
      gate = new Promise((r) => (release = r));
      return () => release();
    },
    drift(v: boolean) {
      drifted = v;
    },
    driver: {
      taskDir: (t: string) => `/nonexistent/${t}`,
      async apply(ws: TaskWorkspace) {
        calls.push(`apply ${JSON.parse(ws.json).resource.local_file.members.content.trim()}`);
        applies.add();
        applying = true;
        await gate;
        applying = false;
        drifted = false;
        return result(true);
      },
      async plan() {
        calls.push(applying ? "plan DURING AN APPLY" : "plan");
        return result(drifted);
      },
      async destroy() {
        return result(true);
      },
    },
  };
}

function setup(global?: DriftCheckOption | false, own?: DriftCheckOption | false, clock?: FakeClock) {
  const task = new MemberList("members", "/tmp/m.txt", "web", false, own);
  const w = fakeWatcher();
  const d = fakeDriver();
  const controller = createController({
    loaded: { config: { tasks: [task], ...(global !== undefined ? { driftCheck: global } : {}) }, file: "/x/cts.config.ts", dir: "/x" },
    reader: { read: async () => [] as never },
    driver: d.driver,
    synthesizer: inProcessSynthesizer(() => task),
    log: createLogger({ write: () => {} }),
    watcher: w.watcher,
    retries: 0,
    ...(clock ? { clock } : {}),
  });
  return { controller, w, d };
}

describe("drift check settings", () => {
  it("are off unless configured; a task's own setting wins, and false turns it off", () => {
    assert.equal(driftSettings(undefined, undefined).enabled, false);
    assert.deepEqual(driftSettings({ every: "30m" }, undefined), { enabled: true, everyMs: 1_800_000, correct: false });
    assert.deepEqual(driftSettings({ every: "30m" }, { every: "2s", correct: true }), { enabled: true, everyMs: 2_000, correct: true });
    assert.equal(driftSettings({ every: "30m" }, false).enabled, false);
  });

  it("refuses an interval that is not a positive duration and a correct that is not a boolean", () => {
    assert.deepEqual(driftCheckProblems({ every: "30m", correct: true }, "driftCheck"), []);
    assert.deepEqual(driftCheckProblems(false, "driftCheck"), []);
    const p = driftCheckProblems({ every: "soon", correct: "yes" }, "tasks[0].driftCheck");
    assert.deepEqual(p.map((x) => x.field), ["tasks[0].driftCheck.every", "tasks[0].driftCheck.correct"]);
    assert.equal(driftCheckProblems({ every: 0 }, "driftCheck")[0]!.field, "driftCheck.every");
    assert.match(driftCheckProblems("30m", "driftCheck")[0]!.message, /every: "30m"/);
  });
});

describe("drift checks in the runtime (fake driver)", () => {
  it("checks on the timer of the runtime's clock, once per interval, and stops with the runtime", async () => {
    const clock = fakeClock();
    const { controller, w, d } = setup({ every: "1h" }, undefined, clock);
    w.set(["a"], false);
    await controller.watch();
    await controller.idle();
    assert.deepEqual(d.calls, ["apply a 10.0.0.1:80"]);
    clock.advance(60 * 60_000 - 1);
    await settled();
    assert.deepEqual(d.calls, ["apply a 10.0.0.1:80"], "not before the interval");
    clock.advance(1);
    await controller.idle();
    await settled();
    assert.deepEqual(d.calls, ["apply a 10.0.0.1:80", "plan"]);
    clock.advance(60 * 60_000);
    await controller.idle();
    await settled();
    assert.deepEqual(d.calls, ["apply a 10.0.0.1:80", "plan", "plan"]);
    await controller.stop(100);
    clock.advance(2 * 60 * 60_000);
    await settled();
    assert.equal(d.calls.length, 3, "no check after the stop");
  });

  it("reports drift as an event with the plan's summary, and leaves it alone without correct", async () => {
    const { controller, w, d } = setup({ every: "1h" });
    w.set(["a"], false);
    await controller.watch();
    await controller.idle();
    d.drift(true);
    const outcome = await controller.checkDrift("members");
    assert.equal(outcome.outcome, "drift");
    assert.equal(outcome.drift!.state, "drifted");
    assert.deepEqual(d.calls, ["apply a 10.0.0.1:80", "plan"]);
    const event = controller.events.list("members")[0]!;
    assert.equal(event.outcome, "drift");
    assert.deepEqual(event.changes, { add: 1, change: 0, destroy: 0 });
    assert.deepEqual(event.drift, { corrected: false });
    assert.equal(controller.view("members")!.drift!.last!.state, "drifted");
    w.set(["b"]);
    await controller.idle();
    assert.equal(controller.view("members")!.drift!.last, undefined, "an apply voids the finding until the next check");
    await controller.stop(100);
  });

  it("applies the last applied JSON again with correct: true", async () => {
    const { controller, w, d } = setup({ every: "1h" }, { every: "1h", correct: true });
    w.set(["a"], false);
    await controller.watch();
    await controller.idle();
    d.drift(true);
    const outcome = await controller.checkDrift("members");
    assert.equal(outcome.drift!.state, "corrected");
    assert.deepEqual(d.calls, ["apply a 10.0.0.1:80", "plan", "apply a 10.0.0.1:80"]);
    assert.equal(controller.events.list("members")[0]!.drift!.corrected, true);
    await controller.stop(100);
  });

  it("records no event when nothing drifted (events are few), and says in-sync", async () => {
    const { controller, w } = setup();
    w.set(["a"], false);
    await controller.watch();
    await controller.idle();
    const before = controller.events.list("members").length;
    assert.equal((await controller.checkDrift("members")).drift!.state, "in-sync");
    assert.equal(controller.events.list("members").length, before);
    assert.equal(controller.view("members")!.drift!.enabled, false, "checked on demand, no timer");
    await controller.stop(100);
  });

  it("does not call changed inputs drift: it plans nothing and leaves them to the next run", async () => {
    const { controller, w, d } = setup({ every: "1h" });
    w.set(["a"], false);
    await controller.watch();
    await controller.idle();
    w.set(["b"], false);
    assert.equal((await controller.checkDrift("members")).drift!.state, "inputs-changed");
    assert.deepEqual(d.calls, ["apply a 10.0.0.1:80"]);
    await controller.stop(100);
  });

  it("waits for the task's run to end: a check takes the task's queue slot, then checks what was applied", async () => {
    const { controller, w, d } = setup({ every: "1h" });
    w.set(["a"], false);
    const release = d.hold();
    await controller.watch();
    await d.applies.reached(1);
    assert.deepEqual(d.calls, ["apply a 10.0.0.1:80"], "the first apply is running");
    const check = controller.checkDrift("members");
    release();
    assert.equal((await check).drift!.state, "in-sync");
    assert.deepEqual(d.calls, ["apply a 10.0.0.1:80", "plan"], "the plan came after the apply, never beside it");
    await controller.stop(100);
  });

  it("answers a check of a disabled task with TASK_DISABLED", async () => {
    const { controller, w } = setup();
    w.set(["a"], false);
    await controller.watch();
    await controller.idle();
    await controller.setEnabled("members", false);
    const r = await controller.checkDrift("members");
    assert.equal(r.ok, false);
    assert.equal(r.error!.code, "TASK_DISABLED");
    await controller.stop(100);
  });
});
