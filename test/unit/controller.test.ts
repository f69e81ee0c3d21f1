import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { createController } from "../../src/daemon/compose.ts";
import { createLogger } from "../../src/log/logger.ts";
import { inProcessSynthesizer } from "../../src/synth/synthesizer.ts";
import { fakeWatcher } from "../support/fake-watcher.ts";
import type { RunResult, TaskWorkspace } from "../../src/terraform/types.ts";
import { MemberList } from "../fixtures/tasks.ts";
import { counter } from "../support/waits.ts";


/** A driver that records applies and can be made slow or failing; `started` counts applies that began. */
function fakeDriver() {
  const applied: string[] = [];
  const started = counter();
  let gate: Promise<void> = Promise.resolve();
  let fail = false;
  const ok: RunResult = { changesPresent: true, summary: { add: 1, change: 0, destroy: 0 }, output: "" };
  return {
    applied,
    started,
    hold() {
      let release!: () => void;
      gate = new Promise((r) => (release = r));
      return () => release();
    },
    failNext(v: boolean) {
      fail = v;
    },
    driver: {
      taskDir: (t: string) => `/nonexistent/${t}`,
      async apply(ws: TaskWorkspace) {
        started.add();
        await gate;
        if (fail) throw new Error("apply failed");
        applied.push(JSON.parse(ws.json).resource.local_file.members.content);
        return ok;
      },
      async plan() {
        return { ...ok, changesPresent: false };
      },
      async destroy() {
        return ok;
      },
    },
  };
}

function setup() {
  const task = new MemberList("members", "/tmp/m.txt");
  const w = fakeWatcher();
  const d = fakeDriver();
  const controller = createController({
    loaded: { config: { tasks: [task] }, file: "/x/cts.config.ts", dir: "/x" },
    reader: { read: async () => [] as never },
    driver: d.driver,
    synthesizer: inProcessSynthesizer(() => task),
    log: createLogger({ write: () => {} }),
    watcher: w.watcher,
    retries: 0,
  });
  return { controller, w, d };
}

describe("Controller in shared cluster mode", () => {
  it("watches and runs only the tasks it owns; a task it does not own is refused", async () => {
    const { controller, w, d } = setup();
    controller.shareTasks();
    w.set([{ id: "a" }]);
    await controller.watch();
    await controller.idle();
    assert.deepEqual(d.applied, [], "owns nothing yet: runs nothing");
    const r = await controller.runNow("members");
    assert.equal(r.error!.code, "CTS_NOT_OWNER");
    w.set([{ id: "b" }]);
    await controller.idle();
    assert.deepEqual(d.applied, [], "data changes of a task it does not own start no run");
    assert.equal(w.open(), 0, "and it opens no query for it");
    controller.own("members");
    assert.equal(w.open(), 1, "owning it opens its query");
    await controller.idle();
    assert.deepEqual(d.applied, ["b 10.0.0.1:80\n"], "owning runs it once with the current data");
    w.set([{ id: "c" }]);
    await controller.idle();
    assert.equal(d.applied.length, 2, "and watches it");
    await controller.stop(100);
  });

  it("disown cancels the task's run and waits until it is not running; its data no longer triggers", async () => {
    const { controller, w, d } = setup();
    controller.shareTasks();
    w.set([{ id: "a" }]);
    await controller.watch();
    const release = d.hold();
    controller.own("members");
    await d.started.reached(1);
    assert.equal(controller.view("members")!.running, true);
    const gone = controller.disown("members", 5_000);
    release();
    await gone;
    assert.equal(controller.view("members")!.running, false);
    assert.equal(controller.mine("members"), false);
    assert.equal(w.open(), 0, "its query is closed");
    const before = d.applied.length;
    w.set([{ id: "z" }]);
    await controller.idle();
    assert.equal(d.applied.length, before);
    await controller.stop(100);
  });

  it("a pause (lost session) drops every owned task at once", async () => {
    const { controller, w } = setup();
    controller.shareTasks();
    w.set([{ id: "a" }]);
    await controller.watch();
    controller.own("members");
    await controller.idle();
    await controller.pause(100);
    assert.deepEqual(controller.ownedNames(), []);
    await controller.resume();
    assert.equal(controller.mine("members"), false, "resuming takes nothing back: locks are acquired again one by one");
    await controller.stop(100);
  });
});

describe("Controller", () => {
  it("collapses three changes during a run into exactly one more run with the latest data", async () => {
    const { controller, w, d } = setup();
    w.set([{ id: "a" }]);
    const release = d.hold();
    await controller.watch();
    await d.started.reached(1);
    w.set([{ id: "a" }, { id: "b" }]);
    w.set([{ id: "a" }, { id: "b" }, { id: "c" }]);
    w.set([{ id: "c" }]);
    release();
    await controller.idle();
    assert.deepEqual(d.applied, ["a 10.0.0.1:80\n", "c 10.0.0.1:80\n"]);
    await controller.stop(100);
  });

  it("skips Terraform when the synthesized JSON equals the last applied one", async () => {
    const { controller, w, d } = setup();
    w.set([{ id: "a" }]);
    await controller.watch();
    await controller.idle();
    const outcome = await controller.runNow("members");
    assert.equal(outcome.outcome, "no-op");
    assert.equal(d.applied.length, 1);
    assert.equal(controller.events.list("members")[0]!.outcome, "no-op");
    await controller.stop(100);
  });

  it("does not skip the next run after a failed apply, even with the same JSON", async () => {
    const { controller, w, d } = setup();
    w.set([{ id: "a" }]);
    await controller.watch();
    await controller.idle();
    d.failNext(true);
    assert.equal((await controller.runNow("members")).outcome, "no-op");
    w.set([{ id: "b" }]);
    await controller.idle();
    assert.equal(controller.events.status("members"), "errored");
    d.failNext(false);
    w.set([{ id: "a" }]);
    await controller.idle();
    assert.deepEqual(d.applied, ["a 10.0.0.1:80\n", "a 10.0.0.1:80\n"]);
    assert.equal(controller.events.status("members"), "successful");
    await controller.stop(100);
  });

  it("answers runNow on a disabled task with a clear error, and runs it again when enabled", async () => {
    const { controller, w, d } = setup();
    w.set([{ id: "a" }]);
    await controller.watch();
    await controller.idle();
    await controller.setEnabled("members", false);
    const r = await controller.runNow("members");
    assert.equal(r.ok, false);
    assert.equal(r.error!.code, "TASK_DISABLED");
    w.set([{ id: "z" }]);
    await controller.setEnabled("members", true);
    await controller.idle();
    assert.equal(d.applied.at(-1), "z 10.0.0.1:80\n");
    await controller.stop(100);
  });

  it("refuses an unknown task with the command to list tasks", () => {
    const { controller } = setup();
    assert.throws(() => controller.runNow("nope"), /no task named 'nope'\. List tasks with `cts task list`/);
  });
});
