import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { gzipSync } from "node:zlib";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createController } from "../../src/daemon/compose.ts";
import { createLogger } from "../../src/log/logger.ts";
import type { ConsulReachability } from "../../src/consul/reachability.ts";
import { fingerprintOf, terraformStates } from "../../src/state/terraform-states.ts";
import { inProcessSynthesizer } from "../../src/synth/synthesizer.ts";
import type { PlanGuards } from "../../src/task/guards.ts";
import type { RunResult, SavedPlan, TaskWorkspace } from "../../src/terraform/types.ts";
import { fakeWatcher } from "../support/fake-watcher.ts";
import { GuardedPool } from "../fixtures/tasks.ts";

/** Terraform states the test can lose: each apply writes a new serial, `lose` deletes one, `replace` swaps its lineage. */
function fakeStates() {
  const states = new Map<string, { lineage: string; serial: number }>();
  return {
    states,
    write(task: string) {
      const s = states.get(task) ?? { lineage: "l1", serial: 0 };
      states.set(task, { ...s, serial: s.serial + 1 });
    },
    lose: (task: string) => void states.delete(task),
    replace: (task: string) => void states.set(task, { lineage: "other", serial: 1 }),
    reader: {
      fingerprint: async (task: string) => {
        const s = states.get(task);
        return s ? `${s.lineage}#${s.serial}` : null;
      },
    },
  };
}

function fakeReachability() {
  const listeners = new Set<(r: boolean) => void>();
  let reachable = true;
  const r: ConsulReachability & { set(v: boolean): void } = {
    get reachable() {
      return reachable;
    },
    lostSince: undefined,
    reason: undefined,
    onChange(l) {
      listeners.add(l);
      return () => void listeners.delete(l);
    },
    set(v: boolean) {
      reachable = v;
      for (const l of listeners) l(v);
    },
  };
  return r;
}

function setup(guards?: PlanGuards) {
  const task = new GuardedPool("pool", "/tmp/pool", guards);
  const w = fakeWatcher();
  const tf = fakeStates();
  const consul = fakeReachability();
  const calls: string[] = [];
  const ok = (add: number): RunResult => ({ changesPresent: add > 0, summary: { add, change: 0, destroy: 0 }, output: "" });
  const lines: string[] = [];
  const controller = createController({
    loaded: { config: { tasks: [task] }, file: "/x/cts.config.ts", dir: "/x" },
    reader: { read: async () => [] as never },
    driver: {
      taskDir: (t: string) => `/nonexistent/${t}`,
      async apply(ws: TaskWorkspace) {
        calls.push("apply");
        tf.write(ws.task);
        return ok(1);
      },
      plan: async () => ok(0),
      destroy: async () => ok(0),
      async planToApply(): Promise<SavedPlan> {
        calls.push("plan");
        return { ...ok(1), plan: { resource_changes: [{ address: "local_file.a", type: "local_file", mode: "managed", change: { actions: ["create"] } }] }, ref: "p1" };
      },
      async applyPlan(ws: TaskWorkspace) {
        calls.push("apply plan");
        tf.write(ws.task);
        return ok(1);
      },
      discardPlan: async () => undefined,
    },
    synthesizer: inProcessSynthesizer(() => task),
    log: createLogger({ write: (l) => lines.push(l) }),
    watcher: w.watcher,
    retries: 0,
    states: tf.reader,
    consul,
  });
  return { controller, w, tf, consul, calls, lines };
}

describe("a lost Terraform state is never skipped as unchanged", () => {
  it("the same inputs skip while the state they were applied to is there; a state that is gone, or was replaced, runs again and says why", async () => {
    const { controller, w, tf, calls, lines } = setup();
    w.set(["a"], false);
    await controller.watch();
    await controller.idle();
    assert.deepEqual(calls, ["apply"]);
    assert.equal((await controller.runNow("pool")).outcome, "no-op", "state and inputs as applied: skipped");
    tf.lose("pool");
    const again = await controller.runNow("pool");
    assert.equal(again.outcome, "applied");
    assert.match(again.stateLost ?? "", /is gone/);
    const event = controller.events.list("pool")[0]!;
    assert.match(event.state_lost ?? "", /is gone/, "the event says why the run was not skipped");
    assert.ok(lines.some((l) => /task 'pool': the Terraform state it applied to is gone/.test(l)));
    assert.equal((await controller.runNow("pool")).outcome, "no-op", "the new state is the one applied to: skipped again");
    tf.replace("pool");
    assert.match((await controller.runNow("pool")).stateLost ?? "", /was replaced/);
    await controller.stop(100);
  });

  it("with plan guards set, a lost state holds the plan for a person instead of creating everything again", async () => {
    const { controller, w, tf, calls } = setup({ maxDestroy: 10 });
    w.set(["a"], false);
    await controller.watch();
    await controller.idle();
    assert.deepEqual(calls, ["plan", "apply plan"], "the first apply breaks no guard");
    tf.lose("pool");
    const r = await controller.runNow("pool");
    assert.equal(r.outcome, "held");
    assert.ok(r.hold!.reasons.some((x) => /is gone .*: this plan creates again what may still exist/.test(x)), r.hold!.reasons.join("; "));
    await controller.stop(100);
  });

  it("is looked at when Consul comes back: a task whose state is gone is queued, the others are not", async () => {
    const { controller, w, tf, consul, calls } = setup();
    w.set(["a"], false);
    await controller.watch();
    await controller.idle();
    consul.set(false);
    consul.set(true);
    await controller.idle();
    assert.deepEqual(calls, ["apply"], "the state is there: nothing runs");
    tf.lose("pool");
    consul.set(false);
    consul.set(true);
    await controller.checkStates("the test"); // folded into the check Consul's return started
    await controller.idle();
    assert.deepEqual(calls, ["apply", "apply"], "a Consul back empty: the task applies again");
    assert.match(controller.events.list("pool")[0]!.state_lost ?? "", /is gone/);
    await controller.stop(100);
  });

  it("a forced run applies whatever the skip would say", async () => {
    const { controller, w, calls } = setup();
    w.set(["a"], false);
    await controller.watch();
    await controller.idle();
    assert.equal((await controller.runNow("pool")).outcome, "no-op");
    assert.equal((await controller.runNow("pool", { force: true })).outcome, "applied");
    assert.deepEqual(calls, ["apply", "apply"]);
    await controller.stop(100);
  });
});

describe("where a task's Terraform state is, looked at without Terraform", () => {
  it("the consul backend (CTS's default): the workspace's key on cts's own Consul, by lineage and serial when readable", async () => {
    const kv = new Map<string, string>([["cts/tf-env:web", JSON.stringify({ lineage: "abc", serial: 7 })]]);
    const states = terraformStates({ consul: { path: "cts/tf", gzip: false } }, { kv: async (k) => kv.get(k) ?? null, taskDir: () => "/nowhere" });
    assert.equal(await states.fingerprint("web"), "abc#7");
    assert.equal(await states.fingerprint("db"), null, "no key: no state");
    const elsewhere = terraformStates({ consul: { path: "cts/tf", address: "other:8500" } }, { kv: async () => null, taskDir: () => "/nowhere" });
    assert.equal(await elsewhere.fingerprint("web"), undefined, "another Consul: cannot tell, so the skip keys on the JSON alone");
    const failing = terraformStates({ consul: { path: "cts/tf" } }, { kv: async () => Promise.reject(new Error("unreachable")), taskDir: () => "/nowhere" });
    assert.equal(await failing.fingerprint("web"), undefined);
  });

  it("the local backend: the workspace's state file in the task's working dir", async () => {
    const dir = mkdtempSync(join(tmpdir(), "cts-tfstate-"));
    try {
      const states = terraformStates({ local: {} }, { taskDir: () => dir });
      assert.equal(await states.fingerprint("web"), null);
      mkdirSync(join(dir, "terraform.tfstate.d", "web"), { recursive: true });
      writeFileSync(join(dir, "terraform.tfstate.d", "web", "terraform.tfstate"), JSON.stringify({ lineage: "l", serial: 2 }));
      assert.equal(await states.fingerprint("web"), "l#2");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("a gzipped state is read by lineage and serial; anything else by a digest", () => {
    assert.equal(fingerprintOf(gzipSync(JSON.stringify({ lineage: "z", serial: 3 }))), "z#3");
    assert.match(fingerprintOf(Buffer.from('{"current-hash":"x","chunks":[]}')), /^sha256:[0-9a-f]{32}$/);
  });
});
