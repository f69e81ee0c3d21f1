import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { parseCreateBody, parseTask } from "../../src/api/task-request.ts";
import { parsePatchBody, patchedTask } from "../../src/api/task-patch.ts";
import { decodeCreateRequest } from "../../src/cts/api/decode.ts";
import { checkTaskChain, downstreamRefusal } from "../../src/api/task-chain.ts";
import { specToCts, taskToCts } from "../../src/cts/api/shape.ts";
import { taskFromHcl } from "../../src/cli/task-file.ts";
import { TaskRegistry } from "../../src/runtime/tasks.ts";
import type { TaskView } from "../../src/runtime/controller.ts";
import { services } from "../../src/task/conditions.ts";
import { Task, type ServicesCondition, type TaskInput, type TaskScope } from "../../src/index.ts";
import { TerraformOutput } from "cdktf";
import { createController } from "../../src/daemon/compose.ts";
import { createLogger } from "../../src/log/logger.ts";
import { inProcessSynthesizer } from "../../src/synth/synthesizer.ts";
import type { RunResult, TaskWorkspace } from "../../src/driver/types.ts";
import { fakeWatcher } from "../support/fake-watcher.ts";

const base = { name: "firewall", module: "./modules/firewall", condition: { services: { names: ["web"] } } };

/** The message of what `fn` throws, with its HTTP status. */
function refusal(fn: () => unknown): { status: number; message: string } {
  try {
    fn();
  } catch (err) {
    return { status: (err as { status: number }).status, message: (err as Error).message };
  }
  throw new Error("nothing was refused");
}

/** The daemon's tasks: config task `pool`, API task `firewall` after it, `audit` after firewall. */
const daemon = [{ name: "pool" }, { name: "firewall", after: ["pool"] }, { name: "audit", after: ["firewall"] }, { name: "web" }];

describe("cts_after in POST /v1/tasks: the task's own checks", () => {
  it("maps cts_after (in any case) onto the task's after", async () => {
    assert.deepEqual(parseTask({ ...base, cts_after: ["pool"] }).after, ["pool"]);
    const body = (await decodeCreateRequest({ Task: { ...base, CTS_After: ["pool", "dns"] } })) as unknown;
    assert.deepEqual(parseCreateBody(body).after, ["pool", "dns"]);
    assert.equal(parseTask(base).after, undefined, "no chain without it");
    assert.equal(parseTask({ ...base, cts_after: [] }).after, undefined, "an empty list is no chain");
  });

  it("answers 400 naming task.cts_after and the fix for a value that is not a list of other task names", () => {
    const bad = (after: unknown) => refusal(() => parseTask({ ...base, cts_after: after }));
    assert.deepEqual(bad("pool"), { status: 400, message: 'invalid task: task.cts_after must be a list of task names, e.g. "cts_after": ["upstream-task"] (got "pool").' });
    assert.match(bad(["pool", 3]).message, /task\.cts_after\[1\] must be a task name \(got 3\)\./);
    assert.match(bad(["pool", "no way"]).message, /task\.cts_after\[1\] must be a task name \(got "no way"\)\./);
    assert.match(bad(["firewall"]).message, /task\.cts_after\[0\] names the task itself \('firewall'\): a task cannot run after itself\. Remove it\./);
    assert.match(bad(["pool", "pool"]).message, /task\.cts_after\[1\] names 'pool' twice\. Remove one\./);
  });

  it("refuses a variable named upstream_outputs beside cts_after: it would replace the upstream outputs", () => {
    const r = refusal(() => parseTask({ ...base, cts_after: ["pool"], variables: { upstream_outputs: "x" } }));
    assert.equal(r.status, 400);
    assert.match(r.message, /task\.variables\.upstream_outputs is what cts passes a task with cts_after/);
    assert.doesNotThrow(() => parseTask({ ...base, variables: { upstream_outputs: "x" } }), "without a chain, the name is the module's own");
  });
});

describe("cts_after against the daemon's tasks (config and API tasks alike)", () => {
  it("takes names of tasks the daemon has", () => {
    assert.doesNotThrow(() => checkTaskChain({ name: "new", after: ["pool", "audit"] }, daemon));
    assert.doesNotThrow(() => checkTaskChain({ name: "new" }, daemon));
  });

  it("answers 400 naming task.cts_after[i], the unknown name and the one probably meant", () => {
    assert.deepEqual(
      refusal(() => checkTaskChain({ name: "new", after: ["pool", "firewal"] }, daemon)),
      {
        status: 400,
        message:
          "invalid task: task.cts_after[1] names task 'firewal', which does not exist. Did you mean 'firewall'? A task runs after tasks the daemon has (its config's or created through the API): create that task first, or fix the name.",
      },
    );
    assert.doesNotMatch(refusal(() => checkTaskChain({ name: "new", after: ["zzzzzz"] }, daemon)).message, /Did you mean/, "no guess when nothing is close");
  });

  it("answers 400 with the path when a changed task would close a circle", () => {
    const r = refusal(() => checkTaskChain({ name: "firewall", after: ["pool", "audit"] }, daemon));
    assert.equal(r.status, 400);
    assert.match(r.message, /^invalid task: task\.cts_after makes a circle of tasks: firewall → audit → firewall\. A chain must end: remove one of these names from a `cts_after`\.$/);
  });

  it("is not this request's fault when another task names a task that went missing", () => {
    assert.doesNotThrow(() => checkTaskChain({ name: "new", after: ["pool"] }, [...daemon, { name: "orphan", after: ["gone"] }]));
  });
});

describe("deleting a task that others run after", () => {
  it("is refused with the downstream tasks named and the fix", () => {
    assert.equal(
      downstreamRefusal("pool", daemon),
      "task 'pool' cannot be deleted: task 'firewall' runs after it and reads its outputs (its cts_after, or after in code, lists 'pool'). Delete 'firewall' first, or take 'pool' out of its cts_after (PATCH a task created through the API; change a config task in the config and restart), then delete 'pool'.",
    );
    assert.match(downstreamRefusal("pool", [...daemon, { name: "dns", after: ["pool"] }])!, /tasks 'firewall', 'dns' run after it and read its outputs \(their cts_after/);
  });

  it("lets a task nothing runs after go", () => {
    assert.equal(downstreamRefusal("audit", daemon), undefined);
    assert.equal(downstreamRefusal("web", daemon), undefined);
  });
});

describe("cts_after in the task's API shape", () => {
  const view = (extra: Partial<TaskView> = {}): TaskView => ({
    name: "firewall",
    description: "",
    enabled: true,
    origin: "api",
    status: "successful",
    condition: services({ names: ["web"] }),
    inputs: {},
    module: "./modules/firewall",
    version: "",
    variables: {},
    bufferPeriod: { enabled: false, min: 0, max: 0 },
    running: false,
    className: "ModuleTask",
    ...extra,
  });

  it("GET shows cts_after for a task in a chain, last, and answers CTS's keys exactly without one", () => {
    assert.deepEqual(taskToCts(view({ after: ["pool"] })).cts_after, ["pool"]);
    assert.equal(Object.keys(taskToCts(view({ after: ["pool"] }))).at(-1), "cts_after");
    assert.deepEqual(Object.keys(taskToCts(view())), ["name", "description", "enabled", "module", "version", "variables", "providers", "condition", "module_input", "buffer_period", "origin"]);
  });

  it("PATCH keeps an API task's cts_after, changes it, and removes it with null", () => {
    const spec = parseTask({ ...base, cts_after: ["pool"] });
    assert.deepEqual(specToCts(spec).cts_after, ["pool"]);
    assert.deepEqual(parseTask(patchedTask(specToCts(spec), parsePatchBody({ description: "rules" }, "firewall"))).after, ["pool"], "another field's change keeps the chain");
    assert.deepEqual(parseTask(patchedTask(specToCts(spec), parsePatchBody({ cts_after: ["pool", "dns"] }, "firewall"))).after, ["pool", "dns"]);
    assert.equal(parseTask(patchedTask(specToCts(spec), parsePatchBody({ cts_after: null }, "firewall"))).after, undefined);
    assert.equal(specToCts(parseTask(base)).cts_after, undefined);
  });

  it("the task registry's view carries the after of config and API tasks", () => {
    class Pool extends Task<ServicesCondition> {
      constructor(name: string, after?: string[]) {
        super({ name, condition: services({ names: ["web"] }), ...(after ? { after } : {}) });
      }
      synthesize(_scope: TaskScope): void {}
    }
    const registry = new TaskRegistry({ config: { tasks: [new Pool("pool"), new Pool("dns", ["pool"])] }, file: "/x/cts.config.ts", dir: "/x" } as never);
    registry.create(parseTask({ ...base, cts_after: ["dns"] }));
    const state = { status: "successful" as const, running: false, bufferPeriod: { enabled: false, min: 0, max: 0 } };
    assert.deepEqual(["pool", "dns", "firewall"].map((n) => registry.view(n, state)!.after), [undefined, ["pool"], ["dns"]]);
  });
});

describe("cts_after in a task file (cts task create -task-file)", () => {
  it("reads cts_after from the HCL task block and sends it", async () => {
    const task = await taskFromHcl(
      `task "firewall" {
  module    = "./modules/firewall"
  cts_after = ["pool"]
  condition "services" {
    names = ["web"]
  }
}
`,
      "firewall.hcl",
    );
    assert.deepEqual(task.cts_after, ["pool"]);
    assert.deepEqual(parseTask(task).after, ["pool"]);
  });
});

/** A config task that outputs how many instances it sees (`pool_id`, "pool-<n>"). */
class PoolTask extends Task<ServicesCondition> {
  constructor(name = "pool") {
    super({ name, condition: services({ names: ["web"] }), bufferPeriod: false });
  }
  synthesize(scope: TaskScope, input: TaskInput<ServicesCondition>): void {
    new TerraformOutput(scope, "pool_id", { value: `pool-${input.services.length}` });
  }
}

/** Holds one task's applies until opened: `close` answers once an apply waits. */
function applyGate() {
  let held: { task: string; entered: () => void; release: Promise<void>; open: () => void } | undefined;
  return {
    close(task: string): Promise<void> {
      let open!: () => void;
      const release = new Promise<void>((r) => (open = r));
      return new Promise<void>((entered) => (held = { task, entered, release, open }));
    },
    open(): void {
      held?.open();
      held = undefined;
    },
    async pass(task: string): Promise<void> {
      if (held?.task !== task) return;
      held.entered();
      await held.release;
    },
  };
}

describe("a task created through the API with cts_after, at run time", () => {
  /** A controller with config task `pool`, a driver that keeps what each apply was given and returns the root outputs. */
  function setup() {
    const w = fakeWatcher();
    const applied: Array<{ task: string; json: Record<string, any> }> = [];
    const gate = applyGate();
    const pool = new PoolTask();
    const driver = {
      taskDir: (t: string) => `/nonexistent/${t}`,
      async apply(ws: TaskWorkspace): Promise<RunResult> {
        await gate.pass(ws.task);
        const json = JSON.parse(ws.json) as Record<string, any>;
        applied.push({ task: ws.task, json });
        const outputs = Object.fromEntries(Object.entries((json.output ?? {}) as Record<string, { value: unknown }>).map(([k, o]) => [k, { value: o.value, sensitive: false }]));
        return { changesPresent: true, summary: { add: 1, change: 0, destroy: 0 }, output: "", outputs };
      },
      async plan(): Promise<RunResult> {
        return { changesPresent: false, summary: { add: 0, change: 0, destroy: 0 }, output: "" };
      },
      async destroy(): Promise<RunResult> {
        return { changesPresent: true, summary: { add: 0, change: 0, destroy: 1 }, output: "" };
      },
    };
    const controller = createController({
      loaded: { config: { tasks: [pool] }, file: "/x/cts.config.ts", dir: "/x" },
      reader: { read: async () => [] as never },
      driver,
      synthesizer: inProcessSynthesizer((n) => (n === "pool" ? pool : undefined)),
      log: createLogger({ write: () => {} }),
      watcher: w.watcher,
      retries: 0,
    });
    return { controller, w, applied, gate };
  }

  it("runs after its upstream task on a change, with the upstream outputs as the module's upstream_outputs", async () => {
    const { controller, w, applied } = setup();
    w.set([{ id: "1" }], false);
    await controller.watch();
    await controller.idle();
    controller.addModuleTask(parseTask({ ...base, cts_after: ["pool"], buffer_period: { enabled: false } }));
    await controller.whenIdle();
    applied.length = 0;
    w.set([{ id: "1" }, { id: "2" }]);
    await controller.whenIdle();
    assert.deepEqual(applied.map((a) => a.task), ["pool", "firewall"], "the upstream task first");
    assert.deepEqual(applied[1]!.json.module.firewall.upstream_outputs, { pool: { pool_id: "pool-2" } });
    await controller.stop(100);
  });

  it("a change that would close a circle is refused even when it got past the API's check (two changes at once)", async () => {
    const { controller } = setup();
    controller.addModuleTask(parseTask({ ...base, cts_after: ["pool"] }));
    controller.addModuleTask(parseTask({ ...base, name: "audit", cts_after: ["firewall"] }));
    await assert.rejects(controller.replaceModuleTask("firewall", parseTask({ ...base, cts_after: ["pool", "audit"] })), (e: Error & { detail?: { status?: number } }) => {
      assert.match(e.message, /cts_after makes a circle of tasks: firewall → audit → firewall/);
      assert.equal(e.detail?.status, 400);
      return true;
    });
    assert.deepEqual(controller.view("firewall")!.after, ["pool"], "unchanged");
    await controller.stop(100);
  });

  it("refuses a task that would run after a task being deleted (409): its delete found nothing running after it", async () => {
    const { controller } = setup();
    controller.addModuleTask(parseTask({ ...base, name: "dns" }));
    const deleting = controller.deleteTask("dns", { destroy: true });
    assert.throws(
      () => controller.addModuleTask(parseTask({ ...base, cts_after: ["dns"] })),
      (e: Error & { detail?: { status?: number } }) => {
        assert.match(e.message, /cts_after\[0\] names task 'dns', which is being deleted: a task cannot run after it\. Remove 'dns' from cts_after, or create 'dns' again/);
        assert.equal(e.detail?.status, 409);
        return true;
      },
    );
    await deleting;
    assert.equal(controller.view("firewall"), undefined, "nothing was created");
    await controller.stop(100);
  });

  it("refuses a change that waited for its task's run while the task it now runs after was deleted (409)", async () => {
    const { controller, gate } = setup();
    await controller.watch();
    await controller.idle();
    controller.addModuleTask(parseTask({ ...base, name: "dns" }));
    controller.addModuleTask(parseTask({ ...base, cts_after: ["pool"] }));
    await controller.whenIdle();
    // firewall's next apply waits at the gate: the change below waits for that run to end.
    const entered = gate.close("firewall");
    const run = controller.runNow("firewall", { force: true });
    await entered;
    const change = controller.replaceModuleTask("firewall", parseTask({ ...base, cts_after: ["pool", "dns"] }));
    // The delete began before the change was in place: nothing ran after 'dns' then.
    await controller.deleteTask("dns");
    gate.open();
    await run;
    await assert.rejects(change, (e: Error & { detail?: { status?: number } }) => {
      assert.match(e.message, /cts_after\[1\] names task 'dns', which was deleted while this change waited for the task's run to end/);
      assert.equal(e.detail?.status, 409);
      return true;
    });
    assert.deepEqual(controller.view("firewall")!.after, ["pool"], "unchanged");
    await controller.stop(100);
  });

  it("joins its upstream task's chain, so shared mode gives both one owner", () => {
    const { controller } = setup();
    assert.equal(controller.chainOf("pool"), "pool");
    controller.addModuleTask(parseTask({ ...base, name: "a-rules", cts_after: ["pool"] }));
    assert.deepEqual([controller.chainOf("pool"), controller.chainOf("a-rules")], ["a-rules", "a-rules"]);
  });
});
