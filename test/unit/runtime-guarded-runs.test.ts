import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { APPLIED_FILE, FileTaskState } from "../../src/state/file-state.ts";
import { createController } from "../../src/daemon/compose.ts";
import { CtsError } from "../../src/errors/cts-error.ts";
import { createLogger } from "../../src/log/logger.ts";
import { inProcessSynthesizer } from "../../src/synth/synthesizer.ts";
import type { PlanGuards } from "../../src/task/guards.ts";
import type { ApprovalMode } from "../../src/task/guards.ts";
import type { RunResult, SavedPlan, TaskWorkspace } from "../../src/terraform/types.ts";
import { fakeWatcher } from "../support/fake-watcher.ts";
import { GuardedPool } from "../fixtures/tasks.ts";

/**
 * A driver that keeps a fake state (the addresses applied) and kept plans by ref, and records every
 * call: enough to see which path a run takes and what it applies.
 */
function fakeDriver() {
  let state = new Set<string>();
  const plans = new Map<string, Set<string>>();
  const calls: string[] = [];
  let n = 0;
  const desired = (ws: TaskWorkspace) => new Set(Object.keys(JSON.parse(ws.json).resource?.local_file ?? {}).map((k) => `local_file.${k}`));
  const result = (add: number, destroy: number): RunResult => ({ changesPresent: add + destroy > 0, summary: { add, change: 0, destroy }, output: "" });
  return {
    calls,
    state: () => [...state].sort(),
    /** The kept plan file is gone (another machine, a cleaned folder). */
    loseKeptPlans: () => plans.clear(),
    driver: {
      taskDir: (t: string) => `/nonexistent/${t}`,
      async apply(ws: TaskWorkspace) {
        calls.push("apply");
        const want = desired(ws);
        const r = result([...want].filter((a) => !state.has(a)).length, [...state].filter((a) => !want.has(a)).length);
        state = want;
        return r;
      },
      async plan() {
        return result(0, 0);
      },
      async destroy() {
        return result(0, 0);
      },
      async planToApply(ws: TaskWorkspace): Promise<SavedPlan> {
        const want = desired(ws);
        const resource_changes = [
          ...[...want].map((a) => ({ address: a, type: "local_file", mode: "managed", change: { actions: [state.has(a) ? "no-op" : "create"] } })),
          ...[...state].filter((a) => !want.has(a)).map((a) => ({ address: a, type: "local_file", mode: "managed", change: { actions: ["delete"] } })),
        ];
        const add = resource_changes.filter((c) => c.change.actions[0] === "create").length;
        const destroy = resource_changes.filter((c) => c.change.actions[0] === "delete").length;
        const ref = `p${++n}`;
        calls.push(`plan ${ref}`);
        if (add + destroy === 0) return { ...result(0, 0), plan: {}, ref: "" };
        plans.set(ref, want);
        return { ...result(add, destroy), plan: { resource_changes }, ref };
      },
      async applyPlan(_ws: TaskWorkspace, ref: string) {
        calls.push(`apply ${ref}`);
        const want = plans.get(ref);
        if (!want) throw new CtsError("PLAN_NOT_FOUND", "external", "has no kept plan", { task: "pool" });
        plans.delete(ref);
        const r = result([...want].filter((a) => !state.has(a)).length, [...state].filter((a) => !want.has(a)).length);
        state = want;
        return r;
      },
      async discardPlan(_task: string, ref: string) {
        calls.push(`discard ${ref}`);
        plans.delete(ref);
      },
    },
  };
}

/** The count kept in the task state's folder under `root` (`<root>/.cts-state/pool/applied.json`). */
async function keptCount(root: string): Promise<number | undefined> {
  return (JSON.parse(await readFile(join(root, ".cts-state", "pool", APPLIED_FILE), "utf8")) as { count?: number }).count;
}

function setup(guards: PlanGuards | false | undefined, approval?: ApprovalMode, opts: { allowEmpty?: boolean; root?: string } = {}) {
  const task = new GuardedPool("pool", "/tmp/pool", guards, approval);
  if (opts.allowEmpty !== undefined) Object.assign(task, { allowEmpty: opts.allowEmpty });
  const w = fakeWatcher();
  const d = fakeDriver();
  const lines: string[] = [];
  const controller = createController({
    loaded: { config: { tasks: [task] }, file: "/x/cts.config.ts", dir: "/x" },
    reader: { read: async () => [] as never },
    driver: d.driver,
    synthesizer: inProcessSynthesizer(() => task),
    log: createLogger({ write: (line) => lines.push(line) }),
    watcher: w.watcher,
    retries: 0,
    ...(opts.root ? { state: new FileTaskState(opts.root) } : {}),
  });
  return { controller, w, d, lines };
}

const member = (id: string) => `local_file.member-${id}`;

describe("runs behind plan guards (fake driver)", () => {
  it("applies at once, with no plan first, when the task has no guards and no approval", async () => {
    const { controller, w, d } = setup(undefined);
    w.set(["a", "b"], false);
    await controller.watch();
    await controller.idle();
    assert.deepEqual(d.calls, ["apply"]);
  });

  it("plans, checks and applies exactly the checked plan when it passes; holds one that breaks a guard", async () => {
    const { controller, w, d } = setup({ maxDestroy: 0 });
    w.set(["a", "b"], false);
    await controller.watch();
    await controller.idle();
    assert.deepEqual(d.calls, ["plan p1", "apply p1"]);
    w.set(["a"]);
    await controller.idle();
    assert.deepEqual(d.calls.slice(2), ["plan p2"], "held: nothing applied");
    const held = controller.view("pool")!.held!;
    assert.deepEqual(held.reasons, ["the plan destroys 1 resource, more than maxDestroy (0)"]);
    assert.equal(held.ref, "p2");
    assert.equal(controller.events.list("pool")[0]!.outcome, "held");
    // The same inputs again (a restart's first run, a repeated trigger): still held, no new plan.
    const again = await controller.runNow("pool");
    assert.equal(again.outcome, "held");
    assert.deepEqual(d.calls.slice(2), ["plan p2"]);
    const approved = await controller.approve("pool");
    assert.equal(approved.outcome, "applied");
    assert.deepEqual(d.calls.slice(3), ["apply p2"]);
    assert.deepEqual(d.state(), [member("a")]);
    assert.equal(controller.view("pool")!.held, undefined);
    await assert.rejects(controller.approve("pool"), (e: CtsError) => e.code === "PLAN_NOT_HELD" && e.detail.status === 409);
  });

  it("approving without the kept plan plans again and applies only a plan that makes the same changes", async () => {
    const { controller, w, d } = setup({ maxDestroy: 0 });
    w.set(["a", "b"], false);
    await controller.watch();
    await controller.idle();
    w.set(["a"]);
    await controller.idle();
    d.loseKeptPlans();
    const approved = await controller.approve("pool");
    assert.equal(approved.outcome, "applied");
    assert.deepEqual(d.calls.slice(2), ["plan p2", "apply p2", "plan p3", "apply p3"], "p2 was gone; p3 has its digest");
    assert.deepEqual(d.state(), [member("a")]);
  });

  it("newer inputs supersede a held plan (discarded), and inputs back to what is applied drop it", async () => {
    const { controller, w, d, lines } = setup({ maxDestroy: 0 });
    w.set(["a", "b", "c"], false);
    await controller.watch();
    await controller.idle();
    w.set(["a", "b"]);
    await controller.idle();
    w.set(["a"]);
    await controller.idle();
    assert.deepEqual(d.calls.slice(2), ["plan p2", "discard p2", "plan p3"]);
    assert.equal(controller.view("pool")!.held!.summary.destroy, 2);
    // The line is said as the hold goes (a reader of the status sees both together), before the kept plan is removed.
    const saidFirst: boolean[] = [];
    const discard = d.driver.discardPlan;
    d.driver.discardPlan = async (task: string, ref: string) => {
      saidFirst.push(lines.some((l) => l.includes("task 'pool': the held plan was dropped: the inputs are back to what is applied")));
      return discard(task, ref);
    };
    w.set(["a", "b", "c"]);
    await controller.idle();
    assert.deepEqual(d.calls.slice(5), ["discard p3"], "back to what is applied: no plan, the hold dropped");
    assert.deepEqual(saidFirst, [true]);
    assert.equal(controller.view("pool")!.held, undefined);
    assert.equal(controller.events.list("pool")[0]!.outcome, "no-op");
  });

  it("rejecting discards the kept plan and records it; the same inputs are not planned again until they change", async () => {
    const { controller, w, d } = setup({ maxDestroyPercent: 10 });
    w.set(["a", "b"], false);
    await controller.watch();
    await controller.idle();
    w.set(["a"]);
    await controller.idle();
    const held = await controller.reject("pool");
    assert.equal(held.summary.destroy, 1);
    assert.equal(controller.events.list("pool")[0]!.outcome, "rejected");
    assert.deepEqual(d.calls.slice(2), ["plan p2", "discard p2"]);
    assert.equal((await controller.runNow("pool")).outcome, "rejected");
    assert.deepEqual(d.calls.slice(4), [], "not planned again");
    await assert.rejects(controller.reject("pool"), (e: CtsError) => e.code === "PLAN_NOT_HELD");
    w.set(["a", "c"]);
    await controller.idle();
    assert.equal(controller.view("pool")!.held!.summary.destroy, 1, "new inputs are planned and checked");
  });

  it('approval: "always" holds every plan with changes, and a plan without changes is not held', async () => {
    const { controller, w, d } = setup(undefined, "always");
    w.set(["a"], false);
    await controller.watch();
    await controller.idle();
    assert.equal(controller.view("pool")!.held!.why, "always");
    assert.equal((await controller.approve("pool")).outcome, "applied");
    assert.deepEqual(d.state(), [member("a")]);
    // The same JSON: the no-op skip; a forced run plans nothing to change and is not held.
    assert.equal((await controller.runNow("pool")).outcome, "no-op");
    assert.deepEqual(controller.view("pool")!.guards, { approval: "always" });
  });
});

/** A new process on the task's folder `dir` (nothing in memory) hears no instance: the run is refused, nothing applied. */
async function assertRestartRefusesDrop(dir: string): Promise<void> {
  const second = setup(undefined, undefined, { allowEmpty: false, root: dir });
  second.w.set([], false);
  await second.controller.watch();
  await second.controller.idle();
  assert.deepEqual(second.d.calls, [], "nothing applied");
  const ev = second.controller.events.list("pool")[0]!;
  assert.equal(ev.success, false);
  assert.match(ev.error!.message, /dropped from 2 instances to none/);
  assert.match(ev.error!.message, /allowEmpty: true/);
  await second.controller.stop();
}

describe("allowEmpty: false across a restart (fake driver, the task's folder on disk)", () => {
  it("refuses a drop from N instances to none after a restart: the count is kept in the task's state folder", async () => {
    const dir = await mkdtemp(join(tmpdir(), "cts-count-"));
    try {
      const first = setup(undefined, undefined, { allowEmpty: false, root: dir });
      first.w.set(["a", "b"], false);
      await first.controller.watch();
      await first.controller.idle();
      assert.deepEqual(first.d.calls, ["apply"]);
      assert.equal(await keptCount(dir), 2);
      await first.controller.stop();
      // A new process on the same folder: nothing in memory, and Consul now answers no instance.
      await assertRestartRefusesDrop(dir);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("an apply cut short (the daemon stopped mid-apply) still leaves the count it was applying: the restart refuses the drop", async () => {
    const root = await mkdtemp(join(tmpdir(), "cts-count-"));
    // A new working dir: no folder is there yet when the first apply keeps its count.
    const dir = join(root, "sync-tasks");
    try {
      const first = setup(undefined, undefined, { allowEmpty: false, root: dir });
      first.d.driver.apply = async () => {
        throw new CtsError("TERRAFORM_CANCELLED", "external", "cancelled", { task: "pool" });
      };
      first.w.set(["a", "b"], false);
      await first.controller.watch();
      await first.controller.idle();
      assert.equal(first.controller.events.list("pool")[0]!.success, false);
      assert.deepEqual(JSON.parse(await readFile(join(dir, ".cts-state", "pool", APPLIED_FILE), "utf8")), { count: 2 }, "kept before Terraform was called");
      await first.controller.stop();
      await assertRestartRefusesDrop(dir);
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });

  it("an apply of instances that fails part-way counts in the same process too: the next drop to none is refused", async () => {
    const dir = await mkdtemp(join(tmpdir(), "cts-count-"));
    try {
      const { controller, w, d } = setup(undefined, undefined, { allowEmpty: false, root: dir });
      w.set([], false);
      await controller.watch();
      await controller.idle();
      assert.deepEqual(d.calls, ["apply"], "an empty first run applies: nothing to drop from");
      const apply = d.driver.apply;
      d.driver.apply = async () => {
        throw new CtsError("TERRAFORM_FAILED", "external", "failed part-way", { task: "pool" });
      };
      w.set(["a", "b"]);
      await controller.idle();
      assert.equal(controller.events.list("pool")[0]!.success, false);
      d.driver.apply = apply;
      d.calls.length = 0;
      w.set([]);
      await controller.idle();
      assert.deepEqual(d.calls, [], "nothing applied");
      assert.match(controller.events.list("pool")[0]!.error!.message, /dropped from 2 instances to none/);
      await controller.stop();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("a kept count of zero, or none at all, lets an empty answer apply", async () => {
    const dir = await mkdtemp(join(tmpdir(), "cts-count-"));
    try {
      const fresh = setup(undefined, undefined, { allowEmpty: false, root: dir });
      fresh.w.set([], false);
      await fresh.controller.watch();
      await fresh.controller.idle();
      assert.deepEqual(fresh.d.calls, ["apply"], "never applied here before: nothing to drop from");
      assert.equal(await keptCount(dir), 0);
      await fresh.controller.stop();
      const again = setup(undefined, undefined, { allowEmpty: false, root: dir });
      again.w.set([], false);
      await again.controller.watch();
      await again.controller.idle();
      assert.deepEqual(again.d.calls, ["apply"]);
      await again.controller.stop();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
