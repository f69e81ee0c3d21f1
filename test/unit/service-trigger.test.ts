import { describe, it } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { TerraformOutput } from "cdktf";
import { instanceKey, snapshotOf, triggerFires, triggerProblems, triggerText, type ServicesTrigger } from "../../src/task/service-trigger.ts";
import { taskProblems } from "../../src/task/validate.ts";
import { services, type ServicesCondition } from "../../src/task/conditions.ts";
import { Task, type BufferPeriodOption, type TaskInput, type TaskScope } from "../../src/task/task.ts";
import { createController } from "../../src/daemon/compose.ts";
import { createLogger } from "../../src/log/logger.ts";
import { inProcessSynthesizer } from "../../src/synth/synthesizer.ts";
import type { ServiceInstance, Source, SourceData } from "../../src/consul/types.ts";
import type { Subscription, SubscriptionListener, Watcher } from "../../src/watch/types.ts";
import type { RunResult } from "../../src/terraform/types.ts";
import { fakeClock } from "../support/fake-clock.ts";
import { parseTask } from "../../src/api/task-request.ts";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fromCtsConfig } from "../../src/cts/config/load.ts";
import { conditionToCts } from "../../src/cts/api/shape.ts";

const inst = (id: string, node = "n1", extra: Partial<ServiceInstance> = {}): ServiceInstance => ({
  id,
  name: "web",
  kind: "",
  address: "10.0.0.1",
  port: 80,
  meta: {},
  tags: [],
  namespace: "",
  status: "passing",
  node,
  nodeId: "",
  nodeAddress: "",
  nodeDatacenter: "dc1",
  nodeTaggedAddresses: {},
  nodeMeta: {},
  ctsUserDefinedMeta: {},
  ...extra,
});
const snap = (...ids: string[]) => snapshotOf(ids.map((id) => inst(id)));

describe("event triggers: which changes of a services condition run its task", () => {
  it("identifies an instance by node and service ID (within its datacenter and namespace), not by its address, port, tags or health", () => {
    assert.equal(instanceKey(inst("web-1")), instanceKey(inst("web-1", "n1", { address: "10.9.9.9", port: 81, tags: ["x"], status: "warning" })));
    assert.notEqual(instanceKey(inst("web-1", "n1")), instanceKey(inst("web-1", "n2")), "the same ID on another node is another instance");
    assert.notEqual(instanceKey(inst("web-1")), instanceKey(inst("web-1", "n1", { nodeDatacenter: "dc2" })));
    assert.notEqual(instanceKey(inst("web-1")), instanceKey(inst("web-1", "n1", { namespace: "team" })));
    // No separator trick makes two identities one.
    assert.notEqual(instanceKey(inst("a", "b/c")), instanceKey(inst("b/a", "c")));
  });

  it('"change" (and no trigger) fires on every change, as CTS does', () => {
    assert.ok(triggerFires(undefined, snap("a"), snap("a")));
    assert.ok(triggerFires("change", snap("a"), snap()));
  });

  it('"register" fires when an instance appears, not when one goes away or an instance only changes', () => {
    assert.match(triggerFires("register", snap("a"), snap("a", "b"))!, /1 instance registered/);
    assert.match(triggerFires("register", snap("a"), snap("b"))!, /1 instance registered/, "one left and another came: a registration");
    assert.equal(triggerFires("register", snap("a", "b"), snap("a")), undefined);
    assert.equal(triggerFires("register", snap("a"), snap("a")), undefined, "a changed port or tag keeps the identities");
  });

  it('"deregister" fires when an instance goes away, not when one appears', () => {
    assert.match(triggerFires("deregister", snap("a", "b", "c"), snap("a"))!, /2 instances deregistered/);
    assert.equal(triggerFires("deregister", snap("a"), snap("a", "b")), undefined);
  });

  it("a count threshold fires when the count crosses its line in the direction given, and not on changes that stay on one side", () => {
    assert.match(triggerFires({ above: 3 }, snap("a", "b", "c"), snap("a", "b", "c", "d"))!, /rose above 3 \(3 → 4\)/);
    assert.equal(triggerFires({ above: 3 }, snap("a", "b", "c", "d"), snap("a", "b", "c", "d", "e")), undefined, "4 → 5 stays above");
    assert.equal(triggerFires({ above: 3 }, snap("a", "b", "c", "d"), snap("a")), undefined, "falling is not the direction given");
    assert.equal(triggerFires({ above: 3 }, snap("a"), snap("a", "b")), undefined, "1 → 2 stays at or under");
    assert.match(triggerFires({ below: 1 }, snap("a"), snap())!, /fell below 1 \(1 → 0\)/);
    assert.equal(triggerFires({ below: 1 }, snap("a", "b"), snap("a")), undefined);
    assert.match(triggerFires({ above: 0, below: 1 }, snap(), snap("a"))!, /rose above 0/, "first in");
    assert.match(triggerFires({ above: 0, below: 1 }, snap("a"), snap())!, /fell below 1/, "last out");
    assert.match(triggerFires({ above: 1 }, snap("a"), snap("b", "c", "d"))!, /1 → 3/, "a jump over the line crosses it");
    assert.equal(triggerFires({ above: 3 }, snap("a", "b", "c", "d"), snap("a", "b", "x", "y")), undefined, "instances replaced, count unchanged");
  });

  it("every trigger fires on the first data (no earlier data to compare with)", () => {
    for (const t of ["register", "deregister", { above: 5 }, { below: 1 }] as ServicesTrigger[]) assert.ok(triggerFires(t, undefined, snap()), triggerText(t));
  });

  it("decides from the two snapshots alone (property)", () => {
    const ids = fc.uniqueArray(fc.constantFrom("a", "b", "c", "d", "e", "f"), { maxLength: 6 });
    fc.assert(
      fc.property(ids, ids, fc.nat(7), (prev, next, n) => {
        const p = snap(...prev);
        const x = snap(...next);
        assert.equal(!!triggerFires("register", p, x), next.some((id) => !prev.includes(id)));
        assert.equal(!!triggerFires("deregister", p, x), prev.some((id) => !next.includes(id)));
        assert.equal(!!triggerFires({ above: n }, p, x), prev.length <= n && next.length > n);
        assert.equal(!!triggerFires({ below: n + 1 }, p, x), prev.length >= n + 1 && next.length < n + 1);
        // The same instances: no event trigger fires, whatever else changed.
        for (const t of ["register", "deregister", { above: n }, { below: n + 1 }] as ServicesTrigger[]) assert.equal(triggerFires(t, p, snap(...prev)), undefined);
      }),
    );
  });

  it("first in, last out: over any sequence of counts, above: n and below: n+1 fire in turn, once per crossing (property)", () => {
    fc.assert(
      fc.property(fc.array(fc.nat(6), { minLength: 1, maxLength: 40 }), fc.nat(4), (counts, n) => {
        const trigger = { above: n, below: n + 1 };
        const snaps = counts.map((c) => snap(...Array.from({ length: c }, (_, i) => `i${i}`)));
        let side = snaps[0]!.keys.size > n ? "above" : "at or under";
        for (let i = 1; i < snaps.length; i++) {
          const why = triggerFires(trigger, snaps[i - 1], snaps[i]!);
          const now = snaps[i]!.keys.size > n ? "above" : "at or under";
          assert.equal(!!why, now !== side, `${counts.slice(0, i + 1).join(" → ")}`);
          if (why) assert.match(why, now === "above" ? /rose above/ : /fell below/);
          side = now;
        }
      }),
    );
  });
});

describe("event trigger options are checked", () => {
  it("accepts the three names and thresholds", () => {
    for (const t of ["change", "register", "deregister", { above: 0 }, { below: 1 }, { above: 3, below: 1 }]) assert.deepEqual(triggerProblems(t, "condition.trigger"), []);
  });

  it("refuses bad values naming the field and the fix", () => {
    const msg = (t: unknown) => triggerProblems(t, "condition.trigger").map((p) => `${p.field} ${p.message}`).join("\n");
    assert.match(msg("registered"), /^condition\.trigger 'registered' is not a trigger\. Use "change" \(the default\), "register", "deregister", or a count threshold \{ above: n \}/);
    assert.match(msg({}), /condition\.trigger sets no threshold\. Give above: n/);
    assert.match(msg({ above: -1 }), /condition\.trigger\.above must be a whole number of instances, 0 or more \(got -1\)/);
    assert.match(msg({ above: 1.5 }), /condition\.trigger\.above must be a whole number/);
    assert.match(msg({ above: "3" }), /condition\.trigger\.above must be a whole number .*\(got "3"\)/);
    assert.match(msg({ below: 0 }), /condition\.trigger\.below must be a whole number of instances, 1 or more \(got 0\): a count never falls below 0/);
    assert.match(msg({ over: 3 }), /condition\.trigger\.over is not a key of a count threshold\. Use above and\/or below\./);
    assert.match(msg(["register"]), /condition\.trigger must be a string or a count threshold/);
    assert.match(msg(3), /condition\.trigger must be a string or a count threshold/);
    assert.match(triggerProblems("x", "cts_trigger", true)[0]!.message, /\{ above = n \} \/ \{ below = n \}/, "CTS HCL's spelling in an HCL config");
  });

  it("a task's checks include its condition's trigger, and refuse one on a services input (inputs never run a task)", () => {
    const task = (condition: ServicesCondition, inputs = {}) => ({ name: "t", condition, inputs, synthesize() {} }) as unknown as Task;
    assert.deepEqual(taskProblems(task(services({ names: ["web"], trigger: "register" }))), []);
    assert.deepEqual(taskProblems(task(services({ names: ["web"], trigger: { below: 0 } }))).map((p) => p.field), ["condition.trigger.below"]);
    const withInput = { name: "t", condition: { kind: "consul-kv", query: { path: "k" } }, inputs: { services: services({ names: ["web"], trigger: "register" }) }, synthesize() {} } as unknown as Task;
    const [p] = taskProblems(withInput);
    assert.equal(p?.field, "inputs.services.trigger");
    assert.match(p!.message, /never runs the task\. Remove it, or make these services the task's condition/);
  });

  it("services() keeps the trigger beside the query, so two tasks with one query still share its blocking query", () => {
    const c = services({ names: ["web"], trigger: { above: 2 } });
    assert.deepEqual(c, { kind: "services", query: { passingOnly: true, names: ["web"] }, trigger: { above: 2 } });
    assert.deepEqual(services({ names: ["web"] }), { kind: "services", query: { passingOnly: true, names: ["web"] } });
  });
});

class Counted extends Task<ServicesCondition> {
  constructor(trigger: ServicesTrigger, bufferPeriod: BufferPeriodOption | false = false) {
    super({ name: "counted", condition: services({ names: ["web"], trigger }), bufferPeriod });
  }
  synthesize(scope: TaskScope, input: TaskInput<ServicesCondition>): void {
    new TerraformOutput(scope, "ids", { value: input.services.map((s) => s.id).join(",") });
  }
}

/** A controller over one task whose watch is a fake the test feeds; the driver records what each apply received. */
async function watching(task: Counted) {
  const clock = fakeClock();
  let data: ServiceInstance[] = [];
  const listeners: SubscriptionListener[] = [];
  const watcher: Watcher = {
    subscribe<S extends Source>(_s: S, l: SubscriptionListener): Subscription<S> {
      listeners.push(l);
      return { ready: Promise.resolve(), current: () => data as SourceData<S>, close: () => listeners.splice(listeners.indexOf(l), 1) };
    },
    viewCount: () => 1,
    close() {},
  };
  const applied: string[] = [];
  const ok: RunResult = { changesPresent: true, summary: { add: 1, change: 0, destroy: 0 }, output: "" };
  const controller = createController({
    loaded: { config: { tasks: [task] }, file: "/x/cts.config.ts", dir: "/x" },
    reader: { read: async () => [] as never },
    driver: {
      taskDir: (t: string) => `/nonexistent/${t}`,
      apply: async () => {
        applied.push(data.map((s) => s.id).join(","));
        return ok;
      },
      plan: async () => ok,
      destroy: async () => ok,
    },
    synthesizer: inProcessSynthesizer(() => task),
    log: createLogger({ write: () => {} }),
    watcher,
    retries: 0,
    clock,
  });
  await controller.watch();
  await controller.whenIdle();
  /** Sets the catalog's answer and tells the task (as a view does after a blocking query returns); waits for the runs it queued. */
  const change = async (...instances: ServiceInstance[]) => {
    data = instances;
    for (const l of [...listeners]) l.onChange();
    await controller.idle();
  };
  return { controller, clock, applied, change };
}

describe("event triggers in a watching controller (fake watch, fake driver)", () => {
  it("a register task runs once at start, then on a registration and not on a deregistration or a changed instance; each run gets every current instance", async () => {
    const { controller, applied, change } = await watching(new Counted("register"));
    assert.deepEqual(applied, [""], "the start-up run, as every task has");
    await change(inst("a"));
    await change(inst("a"), inst("b"));
    assert.deepEqual(applied, ["", "a", "a,b"]);
    await change(inst("a"));
    await change(inst("a", "n1", { port: 8080 }));
    assert.deepEqual(applied, ["", "a", "a,b"], "a deregistration and a changed port do not run it");
    assert.equal(controller.changeCount("counted"), 4, "every change reached the task's trigger");
    await change(inst("a"), inst("c"));
    assert.deepEqual(applied.at(-1), "a,c", "the next registration's run has the full data (b is gone from it too)");
    await controller.stop(100);
  });

  it("a deregister task runs when an instance goes away, or leaves the passing-only data, and not when one registers", async () => {
    const { controller, applied, change } = await watching(new Counted("deregister"));
    await change(inst("a"), inst("b"));
    assert.deepEqual(applied, [""]);
    // Under the default passing-only filter a critical instance is no longer in the data: it counts as gone.
    await change(inst("a"));
    assert.deepEqual(applied, ["", "a"]);
    await controller.stop(100);
  });

  it("a threshold task runs when the count crosses and not on changes that stay on one side", async () => {
    const { controller, applied, change } = await watching(new Counted({ above: 2, below: 1 }));
    await change(inst("a"));
    await change(inst("a"), inst("b"));
    assert.deepEqual(applied, [""], "0 → 1 → 2 never goes above 2 nor below 1");
    await change(inst("a"), inst("b"), inst("c"));
    assert.deepEqual(applied, ["", "a,b,c"], "2 → 3 rose above 2");
    await change(inst("a"), inst("b"), inst("c"), inst("d"));
    await change(inst("a"), inst("b"));
    await change(inst("a"));
    assert.equal(applied.length, 2, "3 → 4 → 2 → 1 stays on or returns to no line it was asked about");
    await change();
    assert.deepEqual(applied.at(-1), "", "1 → 0 fell below 1");
    await controller.stop(100);
  });

  it("with a buffer period, a firing change starts it, a change that does not fire neither starts nor extends it, and the run takes the data at its end", async () => {
    const { controller, clock, applied, change } = await watching(new Counted("register", { min: "1s", max: "4s" }));
    await change(inst("a"));
    assert.equal(clock.pending(), 1, "the registration waits out the buffer period");
    clock.advance(500);
    await change(inst("a"), inst("b"));
    clock.advance(500);
    await change(inst("b"));
    clock.advance(499);
    await controller.idle();
    assert.deepEqual(applied, [""], "the second registration moved the quiet time on; the deregistration did not");
    clock.advance(1);
    await controller.whenIdle();
    assert.deepEqual(applied, ["", "b"], "one run with the data as it is when the buffer ends");
    await change(inst("b"), inst("c"));
    await change(inst("b"));
    assert.equal(clock.pending(), 1, "the registration of c waits; its deregistration does not cancel the wait");
    clock.advance(1000);
    await controller.whenIdle();
    assert.deepEqual(applied, ["", "b"], "the run sees data equal to what is applied: skipped as a no-op");
    await controller.stop(100);
  });
});

describe("event triggers in the task API (cts_trigger, cts only)", () => {
  it("takes cts_trigger in a services condition, shows it back, and refuses a bad value naming the field and the fix", () => {
    const body = (trigger: unknown) => ({ name: "scale-in", module: "./m", condition: { services: { names: ["web"], cts_trigger: trigger } } });
    const spec = parseTask(body({ above: 0, below: 1 }));
    assert.deepEqual(spec.condition, { kind: "services", query: { passingOnly: true, names: ["web"] }, trigger: { above: 0, below: 1 } });
    assert.deepEqual((conditionToCts(spec.condition).services as Record<string, unknown>).cts_trigger, { above: 0, below: 1 });
    assert.equal((conditionToCts(services({ names: ["web"] })).services as Record<string, unknown>).cts_trigger, undefined, "CTS's shape when unset");
    assert.equal((parseTask(body("deregister")).condition as ServicesCondition).trigger, "deregister");
    assert.throws(() => parseTask(body("sometimes")), (e: Error & { status?: number }) => {
      assert.equal(e.status, 400);
      assert.match(e.message, /task\.condition\.services\.cts_trigger 'sometimes' is not a trigger\. Use "change"/);
      return true;
    });
  });
});

describe("event triggers in a CTS HCL config (cts_trigger, cts only)", () => {
  /** Loads one task whose condition "services" block holds `body`; its condition, or the load error's message. */
  const load = async (body: string, extra = "") => {
    const dir = await mkdtemp(join(tmpdir(), "cts-trigger-"));
    try {
      const file = join(dir, "cts.hcl");
      await writeFile(file, `task {\n  name   = "t"\n  module = "./m"\n  condition "services" {\n    names = ["web"]\n    ${body}\n  }\n${extra}}\n`);
      return (await fromCtsConfig(file))[0]!.condition;
    } catch (e) {
      return (e as Error).message.replace(dir, "<dir>");
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  };

  it("maps the attribute and the block forms to the task's trigger", async () => {
    assert.deepEqual(await load('cts_trigger = "register"'), { kind: "services", query: { passingOnly: true, names: ["web"] }, trigger: "register" });
    assert.deepEqual(((await load("cts_trigger { above = 3 }")) as ServicesCondition).trigger, { above: 3 });
    assert.deepEqual(((await load("cts_trigger = { above = 0, below = 1 }")) as ServicesCondition).trigger, { above: 0, below: 1 });
    assert.equal(((await load("")) as ServicesCondition).trigger, undefined, "CTS's behaviour without it");
  });

  it("refuses a bad value at its file and line, in CTS HCL's spelling", async () => {
    assert.equal(
      await load('cts_trigger = "sometimes"'),
      '<dir>/cts.hcl:6: condition "services": cts_trigger \'sometimes\' is not a trigger. Use "change" (the default), "register", "deregister", or a count threshold { above = n } / { below = n } (or both).',
    );
    assert.match(String(await load("cts_trigger { below = 0 }")), /cts\.hcl:6: condition "services": cts_trigger\.below must be a whole number of instances, 1 or more \(got 0\).*E\.g\. below = 1/);
    assert.match(String(await load('cts_trigger = "register"', '  module_input "services" {\n    names = ["api"]\n    cts_trigger = "register"\n  }\n')), /cts\.hcl:10: 'cts_trigger' is not a valid key in task\.module_input/);
  });
});
