import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { KvTaskState } from "../../src/state/kv-state.ts";
import { parseState, type StoredState } from "../../src/state/stored-state.ts";
import type { StoredTask } from "../../src/state/records.ts";
import { createController } from "../../src/daemon/compose.ts";
import { CtsError } from "../../src/errors/cts-error.ts";
import { createLogger } from "../../src/log/logger.ts";
import { inProcessSynthesizer } from "../../src/synth/synthesizer.ts";
import { fakeWatcher } from "../support/fake-watcher.ts";
import type { RunOptions, RunResult, TaskWorkspace } from "../../src/terraform/types.ts";
import type { TaskEvent } from "../../src/runtime/events.ts";
import type { ModuleTaskSpec } from "../../src/synth/task-ref.ts";
import { services } from "../../src/task/conditions.ts";
import { MemberList } from "../fixtures/tasks.ts";
import { counter } from "../support/waits.ts";


/** A driver whose applies can be held open; a held apply ends as Terraform does when cancelled. */
function fakeDriver() {
  const applied: string[] = [];
  let gate: Promise<void> | undefined;
  const ok: RunResult = { changesPresent: true, summary: { add: 1, change: 0, destroy: 0 }, output: "" };
  const fake = {
    applied,
    /** Applies that reached the driver and wait at the gate (await `held.reached(n)`). */
    held: counter(),
    cancelled: 0,
    hold() {
      let release!: () => void;
      gate = new Promise((r) => (release = r));
      return () => {
        gate = undefined;
        release();
      };
    },
    driver: {
      taskDir: (t: string) => `/nonexistent/${t}`,
      async apply(this: void, ws: TaskWorkspace, opts: RunOptions = {}) {
        if (gate) {
          const g = gate;
          fake.held.add();
          await new Promise<void>((resolve, reject) => {
            void g.then(resolve);
            if (opts.signal?.aborted) reject(new CtsError("TERRAFORM_CANCELLED", "external", "cancelled"));
            opts.signal?.addEventListener("abort", () => reject(new CtsError("TERRAFORM_CANCELLED", "external", "cancelled")), { once: true });
          });
        }
        const json = JSON.parse(ws.json);
        applied.push(`${ws.task}:${json.resource?.local_file?.members?.content ?? "module"}`);
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
  return fake;
}

/**
 * A cluster's task state on an in-memory KV: every write recorded (with how many applies of the
 * task the driver had seen then); `refuse` makes flushes fail, as a lost leader's would.
 */
function clusterState(applies: () => string[] = () => []) {
  const kv = new Map<string, string>();
  const writes: string[] = [];
  const flags = { refuse: false };
  const c = {
    kv,
    writes,
    flags,
    state: new KvTaskState(
      {
        set(key, value) {
          const [, kind, task] = key.split("/").slice(1);
          const what = value === null ? "delete" : kind === "applied" ? (JSON.parse(value).key ? "set" : "void") : "set";
          writes.push(`${what}:${kind}:${task}:${applies().filter((x) => x.startsWith(`${task}:`)).length}`);
          if (value === null) kv.delete(key);
          else kv.set(key, value);
        },
        flush: async (): Promise<boolean> => !flags.refuse,
      },
      "p/state/",
      { fence: () => undefined },
    ),
    stored: (): StoredState => parseState("p/state/", [...kv].map(([key, value]) => ({ key, value }))),
  };
  return c;
}

function stateOf(parts: Partial<StoredState>): StoredState {
  return { tasks: new Map(), events: new Map(), holds: new Map(), applied: new Map(), problems: [], ...parts };
}

function setup(opts: { allowEmpty?: boolean } = {}) {
  const members = new MemberList("members", "/tmp/m.txt");
  if (opts.allowEmpty !== undefined) Object.assign(members, { allowEmpty: opts.allowEmpty });
  const other = new MemberList("other", "/tmp/o.txt");
  const w = fakeWatcher();
  const d = fakeDriver();
  const cluster = clusterState(() => d.applied);
  const controller = createController({
    loaded: { config: { tasks: [members, other] }, file: "/x/cts.config.ts", dir: "/x" },
    reader: { read: async () => [] as never },
    driver: d.driver,
    synthesizer: inProcessSynthesizer((name) => [members, other].find((t) => t.name === name)),
    log: createLogger({ write: () => {} }),
    watcher: w.watcher,
    retries: 0,
    state: cluster.state,
  });
  return { controller, w, d, cluster };
}

const spec = (name: string, enabled = true): ModuleTaskSpec => ({ name, module: "./modules/echo", condition: services({ names: ["web"] }), enabled, variables: { path: `/tmp/${name}` } }) as ModuleTaskSpec;
const event = (task: string, success: boolean): TaskEvent => ({ id: `${task}-${success}`, success, start_time: "", end_time: "", task_name: task, error: success ? null : { message: "x" }, config: {} });

describe("Controller under high availability", () => {
  it("runs nothing while paused: data changes are ignored and runNow answers that it was not run", async () => {
    const { controller, w, d } = setup();
    await controller.pause(0);
    w.set(["a"]);
    const r = await controller.runNow("members");
    assert.equal(r.ok, false);
    assert.equal(r.outcome, "cancelled");
    assert.match(r.error!.message, /not the high-availability leader/);
    assert.deepEqual(d.applied, []);
    assert.equal(w.listeners.length, 0, "nothing is watched while paused");
    await controller.stop(100);
  });

  // The held apply never ends until released: a pause that waited for it would only return after
  // its 60 s grace, past this test's own limit.
  it("pause cancels the apply in progress at once; resume runs every task once, never skipped as a no-op", { timeout: 30_000 }, async () => {
    const { controller, w, d } = setup();
    w.set(["a"]);
    await controller.watch();
    await controller.idle();
    assert.deepEqual(d.applied.sort(), ["members:a 10.0.0.1:80\n", "other:a 10.0.0.1:80\n"]);
    const release = d.hold();
    w.set(["b"]);
    await d.held.reached(1);
    await controller.pause(60_000);
    assert.equal(controller.events.list("members")[0]!.outcome, "cancelled");
    release();
    // Same data as the last successful apply: a new leader still applies, another instance may have changed things.
    w.set(["a"]);
    d.applied.length = 0;
    await controller.resume();
    await controller.idle();
    assert.deepEqual(d.applied.sort(), ["members:a 10.0.0.1:80\n", "other:a 10.0.0.1:80\n"]);
    await controller.stop(100);
  });

  it("a new leader given the stored applied keys skips a task whose inputs equal them and runs the others", async () => {
    const old = setup();
    old.w.set(["a"]);
    await old.controller.watch();
    await old.controller.idle();
    const stored = old.cluster.stored().applied;
    assert.deepEqual([...stored.keys()].sort(), ["members", "other"]);
    assert.equal(stored.get("members")!.count, 1);
    await old.controller.stop(100);

    const next = setup();
    await next.controller.pause(0);
    next.w.set(["a"]);
    // Only the members task's record reached the stored state.
    next.controller.restore(stateOf({ applied: new Map([["members", stored.get("members")!]]) }), { applied: true });
    await next.controller.resume();
    await next.controller.idle();
    assert.deepEqual(next.d.applied, ["other:a 10.0.0.1:80\n"], "the task whose inputs match what was applied is not handed to the driver");
    next.w.set(["b"]);
    await next.controller.idle();
    assert.deepEqual(next.d.applied.sort(), ["members:b 10.0.0.1:80\n", "other:a 10.0.0.1:80\n", "other:b 10.0.0.1:80\n"], "a change after the failover applies");
    await next.controller.stop(100);
  });

  it("a void keeps the count about to be applied: a leader after an apply cut short still refuses a drop to none (allowEmpty: false)", async () => {
    const old = setup({ allowEmpty: false });
    old.w.set(["a", "b"]);
    const release = old.d.hold();
    await old.controller.watch();
    await old.d.held.reached(2);
    assert.deepEqual(old.cluster.stored().applied.get("members"), { count: 2 }, "stored before Terraform may change anything: no key, the count");
    await old.controller.pause(0);
    release();
    await old.controller.stop(100);
    const stored = old.cluster.stored();
    assert.deepEqual(stored.applied.get("members"), { count: 2 }, "the apply was cut short: nothing recorded after it");

    const next = setup({ allowEmpty: false });
    await next.controller.pause(0);
    next.w.set([]);
    next.controller.restore(stored, { applied: true });
    await next.controller.resume();
    await next.controller.idle();
    assert.deepEqual(next.d.applied.filter((x) => x.startsWith("members:")), [], "the drop to none was not applied");
    const ev = next.controller.events.list("members")[0]!;
    assert.equal(ev.success, false);
    assert.match(ev.error!.message, /dropped from 2 instances to none/);
    await next.controller.stop(100);
  });

  it("voids the applied key before the driver is called; a void that cannot be stored fails the run with nothing applied", async () => {
    const { controller, w, d, cluster } = setup();
    w.set(["a"]);
    await controller.watch();
    await controller.idle();
    assert.deepEqual(cluster.writes.filter((s) => s.startsWith("void:applied:members") || s.startsWith("set:applied:members")), ["void:applied:members:0", "set:applied:members:1"], "voided before the apply, recorded after it");
    cluster.flags.refuse = true;
    w.set(["b"]);
    await controller.idle();
    assert.equal(d.applied.filter((x) => x.startsWith("members:")).length, 1, "the refused void stopped the run before the driver");
    const newest = controller.events.list("members")[0]!;
    assert.equal(newest.success, false);
    assert.match(newest.error!.message, /is not run/);
    await controller.stop(100);
  });

  it("answers callers waiting for a queued run when it pauses", async () => {
    const { controller, w, d } = setup();
    w.set(["a"]);
    const release = d.hold();
    await controller.watch();
    await d.held.reached(1);
    const waiting = controller.runNow("members");
    await controller.pause(1_000);
    const r = await waiting;
    assert.equal(r.ok, false);
    release();
    await controller.stop(100);
  });

  it("keeps events and task changes in its task state", async () => {
    const { controller, w, cluster } = setup();
    w.set(["a"]);
    await controller.watch();
    await controller.idle();
    assert.deepEqual([...cluster.stored().events.keys()].sort(), ["members", "other"]);
    assert.equal(cluster.stored().events.get("members")![0]!.outcome, "applied");
    await controller.setEnabled("other", false);
    assert.deepEqual(cluster.stored().tasks.get("other"), { name: "other", origin: "config", enabled: false, updated_at: cluster.stored().tasks.get("other")!.updated_at });
    controller.addModuleTask(spec("api-task", false));
    assert.equal(cluster.stored().tasks.get("api-task")!.spec!.variables!.path, "/tmp/api-task");
    await controller.replaceModuleTask("api-task", { ...spec("api-task", false), variables: { path: "/tmp/2" } } as ModuleTaskSpec);
    assert.equal(cluster.stored().tasks.get("api-task")!.spec!.variables!.path, "/tmp/2");
    await controller.deleteTask("api-task");
    assert.equal(cluster.stored().tasks.has("api-task"), false, "an API task is gone without a trace");
    await controller.deleteTask("members");
    const tombstone: StoredTask | undefined = cluster.stored().tasks.get("members");
    assert.equal(tombstone?.deleted, true, "a deleted config task leaves a tombstone, so a new leader does not bring it back");
    assert.equal(cluster.stored().events.has("members"), false);
    assert.equal(cluster.stored().applied.has("members"), false);
    await controller.stop(100);
  });

  it("restores a stored state without running or writing anything", async () => {
    const { controller, d, cluster } = setup();
    await controller.pause(0);
    const tasks: StoredTask[] = [
      { name: "members", origin: "config", enabled: false },
      { name: "other", origin: "config", enabled: false, deleted: true },
      { name: "api-task", origin: "api", enabled: true, spec: spec("api-task") },
      { name: "broken", origin: "api", enabled: true, spec: { name: "broken", module: "./m", condition: services({ names: [] }) } as unknown as ModuleTaskSpec },
    ];
    const problems = controller.restore(
      stateOf({
        tasks: new Map(tasks.map((t) => [t.name, t])),
        events: new Map([["members", [event("members", false), event("members", true)]], ["api-task", [event("api-task", true)]]]),
      }),
    );
    assert.equal(problems.length, 1);
    assert.match(problems[0]!, /task 'broken' cannot be restored/);
    assert.deepEqual(controller.taskNames().sort(), ["api-task", "members"]);
    assert.equal(controller.view("members")!.enabled, false);
    assert.equal(controller.view("members")!.status, "errored");
    assert.equal(controller.view("api-task")!.origin, "api");
    assert.equal(controller.events.list("api-task").length, 1);

    // An emptied state (--reset-storage) brings the config back as written.
    controller.restore(stateOf({}));
    assert.deepEqual(controller.taskNames().sort(), ["members", "other"]);
    assert.equal(controller.view("members")!.enabled, true);
    assert.equal(controller.view("members")!.status, "unknown");
    assert.deepEqual(cluster.writes, []);
    assert.deepEqual(d.applied, []);
    await controller.stop(100);
  });

  it("refuses to restore while it is watching", async () => {
    const { controller } = setup();
    await controller.watch();
    assert.throws(() => controller.restore(stateOf({})), /paused controller/);
    await controller.stop(100);
  });
});
