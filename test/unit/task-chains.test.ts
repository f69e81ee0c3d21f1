import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { writeFile } from "node:fs/promises";
import { TerraformOutput } from "cdktf";
import { createController } from "../../src/daemon/compose.ts";
import { createLogger } from "../../src/log/logger.ts";
import { inProcessSynthesizer } from "../../src/synth/synthesizer.ts";
import { Task, ModuleTask, services, type ServicesCondition, type TaskInput, type TaskScope } from "../../src/index.ts";
import { Testing } from "../../src/testing.ts";
import { chainOrder, chainProblems, findCycle, afterProblems, chainIdOf } from "../../src/task/chains.ts";
import { upstreamOutputs } from "../../src/runtime/chains.ts";
import { loadConfig } from "../../src/config/load.ts";
import type { RunResult, SavedPlan, TaskWorkspace } from "../../src/driver/types.ts";
import { fakeWatcher } from "../support/fake-watcher.ts";
import { counter } from "../support/waits.ts";
import { tempDir } from "../support/cts.ts";

/** Outputs the number of instances it sees as `pool_id` ("pool-<n>"). */
class Pool extends Task<ServicesCondition> {
  constructor(name = "a", after?: string[]) {
    super({ name, condition: services({ names: ["web"] }), bufferPeriod: false, ...(after ? { after } : {}) });
  }
  synthesize(scope: TaskScope, input: TaskInput<ServicesCondition>): void {
    new TerraformOutput(scope, "pool_id", { value: `pool-${input.services.length}` });
  }
}

/** A Pool whose every plan waits for `cts approve`. */
class ApprovedPool extends Task<ServicesCondition> {
  constructor(name = "a") {
    super({ name, condition: services({ names: ["web"] }), bufferPeriod: false, approval: "always" });
  }
  synthesize(scope: TaskScope, input: TaskInput<ServicesCondition>): void {
    new TerraformOutput(scope, "pool_id", { value: `pool-${input.services.length}` });
  }
}

/** Writes what it reads of its upstream task's outputs (and how many instances of `service` it sees). */
class Member extends Task<ServicesCondition> {
  constructor(
    name = "b",
    private readonly upstream = "a",
    service = "web",
  ) {
    super({ name, condition: services({ names: [service] }), bufferPeriod: false, after: [upstream] });
  }
  synthesize(scope: TaskScope, input: TaskInput<ServicesCondition, {}, Record<string, { pool_id?: string }>>): void {
    new TerraformOutput(scope, "seen", { value: `${input.outputs[this.upstream]?.pool_id ?? "none"} with ${input.services.length}` });
  }
}

/** A driver whose apply returns the JSON's outputs as Terraform would (plus a sensitive one); it can hold or fail a task's applies. */
function fakeDriver() {
  const applied: Array<{ task: string; outputs: Record<string, unknown> }> = [];
  const started = counter();
  const gates = new Map<string, Promise<void>>();
  const failing = new Set<string>();
  const kept = new Map<string, TaskWorkspace>();
  return {
    applied,
    started,
    failing,
    hold(task: string) {
      let release!: () => void;
      gates.set(task, new Promise((r) => (release = r)));
      return () => {
        gates.delete(task);
        release();
      };
    },
    driver: {
      taskDir: (t: string) => `/nonexistent/${t}`,
      async apply(ws: TaskWorkspace): Promise<RunResult> {
        started.add();
        await gates.get(ws.task);
        if (failing.has(ws.task)) throw new Error(`apply of ${ws.task} failed`);
        const json = JSON.parse(ws.json) as { output?: Record<string, { value: unknown }> };
        const values = Object.fromEntries(Object.entries(json.output ?? {}).map(([k, o]) => [k, o.value]));
        applied.push({ task: ws.task, outputs: values });
        const outputs = Object.fromEntries(Object.entries(values).map(([k, v]) => [k, { value: v, sensitive: false }]));
        return { changesPresent: true, summary: { add: 1, change: 0, destroy: 0 }, output: "", outputs: { ...outputs, token: { value: "(sensitive)", sensitive: true } } };
      },
      async plan(): Promise<RunResult> {
        return { changesPresent: false, summary: { add: 0, change: 0, destroy: 0 }, output: "" };
      },
      async destroy(): Promise<RunResult> {
        return { changesPresent: true, summary: { add: 0, change: 0, destroy: 1 }, output: "" };
      },
      // A kept plan is the workspace itself: applying it is applying that JSON (a task with `approval`).
      async planToApply(ws: TaskWorkspace): Promise<SavedPlan> {
        kept.set(`plan-${ws.task}`, ws);
        return { changesPresent: true, summary: { add: 1, change: 0, destroy: 0 }, output: "", plan: { resource_changes: [] }, ref: `plan-${ws.task}` };
      },
      async applyPlan(_ws: TaskWorkspace, ref: string): Promise<RunResult> {
        const ws = kept.get(ref)!;
        kept.delete(ref);
        return this.apply(ws);
      },
      async discardPlan(_task: string, ref: string): Promise<void> {
        kept.delete(ref);
      },
    },
  };
}

function setup(tasks: Array<Task<ServicesCondition>>, watcher?: Parameters<typeof fakeWatcher>[0]) {
  const w = fakeWatcher(watcher);
  const d = fakeDriver();
  const byName = new Map(tasks.map((t) => [t.name, t]));
  const controller = createController({
    loaded: { config: { tasks }, file: "/x/cts.config.ts", dir: "/x" },
    reader: { read: async () => [] as never },
    driver: d.driver,
    synthesizer: inProcessSynthesizer((n) => byName.get(n)),
    log: createLogger({ write: () => {} }),
    watcher: w.watcher,
    retries: 0,
  });
  return { controller, w, d };
}

const seen = (d: ReturnType<typeof fakeDriver>, task: string) => d.applied.filter((a) => a.task === task).map((a) => a.outputs.seen ?? a.outputs.pool_id);

describe("task chains: order, circles and names", () => {
  it("orders tasks after the tasks they list, keeping the given order otherwise", () => {
    const order = chainOrder([
      { name: "c", after: ["b"] },
      { name: "x" },
      { name: "b", after: ["a"] },
      { name: "a" },
    ]).map((t) => t.name);
    assert.deepEqual(order, ["x", "a", "b", "c"]);
  });

  it("finds a circle and names its path", () => {
    assert.deepEqual(findCycle([{ name: "a", after: ["b"] }, { name: "b", after: ["a"] }]), ["a", "b", "a"]);
    assert.deepEqual(findCycle([{ name: "a", after: ["c"] }, { name: "b", after: ["a"] }, { name: "c", after: ["b"] }]), ["a", "b", "c", "a"]);
    assert.equal(findCycle([{ name: "a" }, { name: "b", after: ["a"] }, { name: "c", after: ["a", "b"] }]), undefined);
  });

  it("refuses a circle with its path and an unknown name with the name meant", () => {
    const p = chainProblems([{ name: "a", after: ["b"] }, { name: "b", after: ["a"] }, { name: "c", after: ["pol"] }, { name: "pool" }]);
    assert.ok(p.some((x) => x.task === "a" && /makes a circle of tasks: a → b → a/.test(x.message)), JSON.stringify(p));
    assert.ok(p.some((x) => x.task === "c" && x.field === "after[0]" && /names task 'pol', which is not in the config\. Did you mean 'pool'\?/.test(x.message)), JSON.stringify(p));
  });

  it("refuses an `after` that is not a list of other task names", () => {
    assert.match(afterProblems("a", "b")[0]!.message, /must be a list of task names/);
    assert.match(afterProblems("a", ["a"])[0]!.message, /cannot run after itself/);
    assert.match(afterProblems("a", ["b", "b"])[0]!.message, /twice/);
    assert.deepEqual(afterProblems("a", ["b"]), []);
  });

  it("names a chain by its first task, whichever of its tasks is asked (shared mode assigns by it)", () => {
    const tasks = [{ name: "z", after: ["m"] }, { name: "m" }, { name: "b", after: ["m"] }, { name: "alone" }];
    assert.deepEqual(["z", "m", "b", "alone"].map((n) => chainIdOf(n, tasks)), ["b", "b", "b", "alone"]);
  });

  it("passes plain outputs downstream and never a sensitive or truncated one", () => {
    const out = upstreamOutputs(["a", "never"], (t) =>
      t === "a"
        ? { updatedAt: "", outputs: { id: { value: "p-1", sensitive: false }, token: { value: "(sensitive)", sensitive: true }, big: { value: "(too large)", sensitive: false, truncated: true } } }
        : undefined,
    );
    assert.deepEqual(out, { a: { id: "p-1" }, never: {} });
  });
});

describe("task chains at run time", () => {
  it("runs the upstream task first, then the downstream one with its new outputs, on each change", async () => {
    const { controller, w, d } = setup([new Member("b", "a"), new Pool("a")]);
    w.set([{ id: "1" }], false);
    await controller.watch();
    await controller.idle();
    assert.deepEqual(d.applied.map((a) => a.task), ["a", "b"]);
    assert.deepEqual(seen(d, "b"), ["pool-1 with 1"]);
    w.set([{ id: "1" }, { id: "2" }]);
    await controller.whenIdle();
    assert.deepEqual(d.applied.map((a) => a.task), ["a", "b", "a", "b"]);
    assert.deepEqual(seen(d, "b"), ["pool-1 with 1", "pool-2 with 2"], "b reads a's new output, never the sensitive one");
    await controller.stop(100);
  });

  it("a downstream run triggered by its own data waits for the upstream run in progress", async () => {
    const { controller, w, d } = setup([new Pool("a"), new Member("b", "a")]);
    w.set([{ id: "1" }], false);
    await controller.watch();
    await controller.idle();
    const release = d.hold("a");
    const before = d.started.value;
    w.set([{ id: "1" }, { id: "2" }, { id: "3" }]);
    await d.started.reached(before + 1);
    // Give b every chance to start (many turns of the event loop): it must not while a runs.
    for (let i = 0; i < 50; i++) await new Promise((r) => setImmediate(r));
    assert.equal(d.started.value, before + 1, "only a's apply started");
    release();
    await controller.whenIdle();
    assert.deepEqual(seen(d, "b").at(-1), "pool-3 with 3");
    await controller.stop(100);
  });

  it("runs the chain on one snapshot: a change during the upstream apply reaches the downstream run only after it, in a run of its own", async () => {
    // b watches 'db', which a does not: a change of 'db' while a applies does not run a again.
    const { controller, w, d } = setup([new Pool("a"), new Member("b", "a", "db"), new Member("c", "b", "db")]);
    w.set([{ id: "1" }], false);
    await controller.watch();
    await controller.idle();
    const release = d.hold("a");
    const before = d.started.value;
    w.set([{ id: "1" }, { id: "2" }]);
    await d.started.reached(before + 1);
    // a read 2 instances; 'db' (and every source, in this fake) now changes while a applies.
    w.set([{ id: "1" }, { id: "2" }, { id: "3" }], true, "db");
    release();
    await controller.whenIdle();
    assert.deepEqual(seen(d, "b").slice(1), ["pool-2 with 2", "pool-2 with 3"], "b first ran on what a read, then once more on the newer data");
    // c, after b: b's second run was wanted when b's first ended, so c waited for it and ran once, on its snapshot.
    assert.deepEqual(seen(d, "c").slice(1), ["none with 3"]);
    const runs = controller.taskRuns?.("b") ?? [];
    assert.deepEqual(runs.slice(0, 2).map((r) => r.trigger).reverse(), ["upstream", "change"]);
    await controller.stop(100);
  });

  it("a downstream source that answers after the upstream run started makes no second run (its data and key are read together)", async () => {
    const { controller, w, d } = setup([new Pool("a"), new Member("b", "a", "db")], { pending: "db" });
    w.set([{ id: "1" }], false);
    await controller.watch();
    // a's first run reads the snapshot while b's source has not answered yet; then it answers.
    for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
    w.answer();
    await controller.idle();
    await controller.whenIdle();
    assert.deepEqual(seen(d, "b"), ["pool-1 with 1"], "b applied once, on the snapshot");
    assert.deepEqual((controller.taskRuns?.("b") ?? []).map((r) => r.trigger), ["start"], "and ran once: no second run for data it already had");
    await controller.stop(100);
  });

  it("a downstream run with nothing newer than the chain's snapshot runs once", async () => {
    const { controller, w, d } = setup([new Pool("a"), new Member("b", "a")]);
    w.set([{ id: "1" }], false);
    await controller.watch();
    await controller.idle();
    w.set([{ id: "1" }, { id: "2" }]);
    await controller.whenIdle();
    assert.deepEqual(seen(d, "b"), ["pool-1 with 1", "pool-2 with 2"]);
    await controller.stop(100);
  });

  it("skips the downstream tasks of a failed upstream run, saying why, and runs them when it applies again", async () => {
    const { controller, w, d } = setup([new Pool("a"), new Member("b", "a"), new Member("c", "b")]);
    w.set([{ id: "1" }], false);
    await controller.watch();
    await controller.idle();
    d.failing.add("a");
    w.set([{ id: "1" }, { id: "2" }]);
    await controller.whenIdle();
    for (const name of ["b", "c"]) {
      const [event] = controller.events.list(name);
      assert.equal(event!.outcome, "skipped", name);
      assert.equal(event!.success, false);
      assert.match(event!.error!.message, /upstream task 'a' failed/);
      assert.equal(controller.view(name)!.status, "errored");
    }
    const r = await controller.runNow("b");
    assert.equal(r.outcome, "skipped", "a run asked while the upstream task is broken is skipped too");
    assert.equal(r.error!.code, "TASK_UPSTREAM_FAILED");
    d.failing.delete("a");
    await controller.runNow("a");
    await controller.whenIdle();
    assert.deepEqual(seen(d, "b").at(-1), "pool-2 with 2");
    assert.equal(controller.events.list("c")[0]!.outcome, "applied", "the chain ran through once a applied");
    await controller.stop(100);
  });

  it("skips the downstream task of a held upstream run, saying why, and runs it once the plan is approved and applied", async () => {
    const { controller, w, d } = setup([new ApprovedPool("a"), new Member("b", "a")]);
    w.set([{ id: "1" }], false);
    await controller.watch();
    await controller.idle();
    assert.equal(controller.events.list("a")[0]!.outcome, "held");
    const [skipped] = controller.events.list("b");
    assert.equal(skipped!.outcome, "skipped");
    assert.match(skipped!.error!.message, /upstream task 'a' is held for approval/);
    assert.deepEqual(d.applied.map((x) => x.task), [], "nothing applied while a is held");
    await controller.approve("a");
    await controller.whenIdle();
    assert.deepEqual(d.applied.map((x) => x.task), ["a", "b"]);
    assert.deepEqual(seen(d, "b"), ["pool-1 with 1"], "b ran with the approved plan's outputs");
    await controller.stop(100);
  });

  it("skips the downstream task of a rejected upstream plan, saying it was rejected, until the upstream task applies new inputs", async () => {
    const { controller, w, d } = setup([new ApprovedPool("a"), new Member("b", "a")]);
    w.set([{ id: "1" }], false);
    await controller.watch();
    await controller.idle();
    await controller.reject("a");
    const asked = await controller.runNow("b");
    assert.equal(asked.outcome, "skipped");
    assert.equal(asked.error!.code, "TASK_UPSTREAM_FAILED");
    assert.match(asked.error!.message, /upstream task 'a' was rejected/, "nothing is held any more");
    assert.equal((await controller.runNow("a")).outcome, "rejected", "the rejected inputs are not planned again");
    await controller.whenIdle();
    const [skipped] = controller.events.list("b");
    assert.equal(skipped!.outcome, "skipped");
    assert.match(skipped!.error!.message, /was skipped: upstream task 'a' was rejected\. It runs again once 'a' applies\./);
    w.set([{ id: "1" }, { id: "2" }]);
    await controller.whenIdle();
    assert.equal(controller.events.list("a")[0]!.outcome, "held", "the new inputs' plan waits for approval");
    await controller.approve("a");
    await controller.whenIdle();
    assert.deepEqual(d.applied.map((x) => x.task), ["a", "b"]);
    assert.deepEqual(seen(d, "b"), ["pool-2 with 2"], "b ran with the outputs of a's applied plan");
    await controller.stop(100);
  });

  it("`once` runs the chain in order and answers a skipped downstream run", async () => {
    const { controller, w, d } = setup([new Member("b", "a"), new Pool("a")]);
    w.set([{ id: "1" }], false);
    const ok = await controller.once();
    assert.deepEqual(d.applied.map((a) => a.task), ["a", "b"]);
    assert.deepEqual(ok.map((o) => o.outcome).sort(), ["applied", "applied"]);
    await controller.stop(100);
    const second = setup([new Member("b", "a"), new Pool("a")]);
    second.d.failing.add("a");
    const out = await second.controller.once();
    assert.deepEqual(Object.fromEntries(out.map((o) => [o.task, o.outcome])), { a: "failed", b: "skipped" });
    await second.controller.stop(100);
  });
});

describe("task chains in Testing and ModuleTask", () => {
  it("Testing gives the task the outputs of the test, `{}` for an upstream task not given", () => {
    const json = Testing.synthTask(new Member("b", "a"), { services: [{ name: "web" }], outputs: { a: { pool_id: "p-9" } } });
    assert.equal(json.output.seen.value, "p-9 with 1");
    assert.equal(Testing.synthTask(new Member("b", "a"), { services: [{ name: "web" }] }).output.seen.value, "none with 1");
  });

  it("a ModuleTask with `after` passes the upstream outputs as the module's `upstream_outputs` variable", () => {
    const m = new ModuleTask({ name: "fw", module: "./m", condition: services({ names: ["web"] }), after: ["a", "b"] });
    const json = m.terraformJson({ services: [], outputs: { a: { pool_id: "p-1" } } });
    assert.deepEqual(json.module.fw.upstream_outputs, { a: { pool_id: "p-1" }, b: {} });
    const plain = new ModuleTask({ name: "fw", module: "./m", condition: services({ names: ["web"] }) });
    assert.equal(plain.terraformJson({ services: [] }).module.fw.upstream_outputs, undefined, "without `after` nothing changes (CTS's root module)");
  });
});

describe("task chains in configs", () => {
  it("refuses a circle in cts.config.ts at load, with the path", async () => {
    const tmp = await tempDir("cts-chains-");
    try {
      const file = join(tmp.dir, "cts.config.ts");
      const api = new URL("../../src/index.ts", import.meta.url).pathname;
      await writeFile(
        file,
        `import { defineConfig, ModuleTask, services } from ${JSON.stringify(api)};
const t = (name: string, after: string[]) => new ModuleTask({ name, module: "./m", condition: services({ names: ["web"] }), after });
export default defineConfig({ tasks: [t("a", ["c"]), t("b", ["a"]), t("c", ["b"])] });
`,
      );
      await assert.rejects(loadConfig(file), (err: Error) => /tasks\[0\]\.after makes a circle of tasks: a → b → c → a/.test(err.message) || assert.fail(err.message));
    } finally {
      await tmp.cleanup();
    }
  });

  it("reads cts_after in CTS HCL, and refuses an unknown name at its line", async () => {
    const tmp = await tempDir("cts-chains-hcl-");
    try {
      const hcl = (after: string) => `task {
  name = "a"
  module = "./m"
  condition "services" { names = ["web"] }
}
task {
  name = "b"
  module = "./m"
  cts_after = ${after}
  condition "services" { names = ["web"] }
}
`;
      const file = join(tmp.dir, "cts.hcl");
      await writeFile(file, hcl(`["a"]`));
      const loaded = await loadConfig(file, tmp.dir);
      assert.deepEqual(loaded.config.tasks.map((t) => [t.name, t.after]), [["a", []], ["b", ["a"]]]);
      await writeFile(file, hcl(`["aa"]`));
      await assert.rejects(loadConfig(file, tmp.dir), (err: Error) => /cts\.hcl:9: task 'b': cts_after\[0\] names task 'aa', which is not in the config\. Did you mean 'a'\?/.test(err.message) || assert.fail(err.message));
      await writeFile(file, hcl(`["b"]`));
      await assert.rejects(loadConfig(file, tmp.dir), (err: Error) => /cts\.hcl:9: .*cannot run after itself/.test(err.message) || assert.fail(err.message));
    } finally {
      await tmp.cleanup();
    }
  });
});

describe("task chains in shared mode", () => {
  it("gives every task of a chain one owner, and follows a pin of any of its tasks", async () => {
    const { assign } = await import("../../src/ha/rendezvous.ts");
    const tasks = ["a", "b", "c", "d", "e", "f", "g", "h"];
    const chained = [{ name: "a" }, { name: "b", after: ["a"] }, { name: "c", after: ["b"] }];
    const groupOf = (t: string) => chainIdOf(t, [...chained, ...tasks.slice(3).map((name) => ({ name }))]);
    const members = ["m1", "m2", "m3", "m4"];
    const owners = assign(tasks, members, new Map(), groupOf);
    assert.equal(new Set(["a", "b", "c"].map((t) => owners.get(t))).size, 1, "a, b and c on one member");
    const pinned = assign(tasks, members, new Map([["c", "m3"]]), groupOf);
    assert.deepEqual(["a", "b", "c"].map((t) => pinned.get(t)), ["m3", "m3", "m3"]);
    assert.deepEqual(assign(tasks, members), assign(tasks, members, new Map(), (t) => t), "without chains: as before");
  });
});

describe("task chains across the daemon's thread boundary", () => {
  it("a task's `after` survives its declaration (the daemon's main thread keeps a stand-in of each task)", async () => {
    const { declareTask, taskFromDeclaration } = await import("../../src/task/declaration.ts");
    const ModuleTaskBase = (await import("../../src/task/module-task.ts")).ModuleTask;
    const back = taskFromDeclaration(structuredClone(declareTask(new Member("b", "a"))));
    assert.deepEqual(back.after, ["a"]);
    const module = taskFromDeclaration(structuredClone(declareTask(new ModuleTaskBase({ name: "fw", module: "./m", condition: services({ names: ["web"] }), after: ["pool"] }))));
    assert.deepEqual(module.after, ["pool"]);
  });
});
