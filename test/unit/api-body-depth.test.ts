import { describe, it } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { createApiApp } from "../../src/api/app.ts";
import type { ApiController } from "../../src/api/deps.ts";
import { MAX_BODY_DEPTH } from "../../src/api/request-body.ts";
import { createLogger } from "../../src/log/logger.ts";
import { EventStore } from "../../src/runtime/events.ts";
import type { RunOutcome, TaskView } from "../../src/runtime/controller.ts";
import type { ModuleTaskSpec } from "../../src/synth/task-ref.ts";
import { services } from "../../src/task/conditions.ts";

/** A controller that stores API-created tasks in memory and counts every change. */
function storingController() {
  const events = new EventStore();
  const views = new Map<string, TaskView>();
  const changes: string[] = [];
  const view = (spec: ModuleTaskSpec): TaskView => ({
    name: spec.name,
    description: "",
    enabled: true,
    origin: "api",
    status: "unknown",
    condition: spec.condition,
    inputs: {},
    bufferPeriod: { enabled: false, min: 0, max: 0 },
    running: false,
    className: "ModuleTask",
    module: spec.module,
    spec,
    ...(spec.variables ? { variables: spec.variables } : {}),
  });
  const ok = (task: string): RunOutcome => ({ task, ok: true, outcome: "applied" });
  const ctrl: ApiController = {
    events,
    taskNames: () => [...views.keys()],
    view: (n) => views.get(n),
    runNow: async (n) => ok(n),
    setEnabled: async () => undefined,
    planTask: async (n) => ok(n),
    addModuleTask: (spec) => {
      changes.push(`add ${spec.name}`);
      views.set(spec.name, view(spec));
      return undefined as never;
    },
    dryRunModuleTask: async (spec) => ok(spec.name),
    deleteTask: async (n) => (views.delete(n), undefined),
    replaceModuleTask: async (n, spec) => (changes.push(`replace ${n}`), views.set(n, view(spec)), undefined as never),
    checkDrift: async (n) => ok(n),
    onActivity: () => () => undefined,
    approve: () => Promise.reject(new Error("not used")),
    reject: () => Promise.reject(new Error("not used")),
  };
  return { ctrl, views, changes };
}

/** `depth` nested JSON objects (or arrays) around a number: `{"a":{"a":1}}` is depth 2. */
const nested = (depth: number, kind: "object" | "array" = "object") => (kind === "object" ? `{"a":`.repeat(depth) + "1" + "}".repeat(depth) : "[".repeat(depth) + "1" + "]".repeat(depth));

/** A create body whose whole JSON nests `depth` levels (at least 5: the condition's names list). */
function createBody(name: string, depth: number, kind: "object" | "array" = "object"): string {
  // body → task → variables → v: the value nests depth − 3 more levels.
  const v = depth > 3 ? nested(depth - 3, kind) : "1";
  return `{"task":{"name":"${name}","module":"./m","condition":{"services":{"names":["web"]}},"variables":{"v":${v}}}}`;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

function setup() {
  const fake = storingController();
  const app = createApiApp({ controller: fake.ctrl, log: createLogger({ level: "error" }) });
  const call = async (method: string, path: string, body?: string) => {
    const res = await app.request(path, { method, ...(body !== undefined ? { body, headers: { "content-type": "application/json" } } : {}) });
    const text = await res.text();
    return { status: res.status, text, body: JSON.parse(text) as any };
  };
  return { ...fake, call };
}

describe("request bodies nested too deep", () => {
  it(`refuses a POST body nested past ${MAX_BODY_DEPTH} levels with 400 in CTS's error shape, and stores nothing`, async () => {
    const { call, changes } = setup();
    const res = await call("POST", "/v1/tasks", createBody("deep", 5000));
    assert.equal(res.status, 400, res.text.slice(0, 300));
    assert.deepEqual(Object.keys(res.body).sort(), ["error", "request_id"]);
    assert.match(res.body.request_id, UUID);
    assert.match(res.body.error.message, new RegExp(`nests deeper than ${MAX_BODY_DEPTH} levels`));
    assert.match(res.body.error.message, /task\.variables\.v/, "names where it gets too deep");
    assert.deepEqual(changes, []);
    const list = await call("GET", "/v1/tasks");
    assert.equal(list.status, 200, list.text.slice(0, 300));
    assert.deepEqual(list.body.tasks, []);
  });

  it(`accepts a body of exactly ${MAX_BODY_DEPTH} levels and answers it back on GET`, async () => {
    const { call, changes } = setup();
    const created = await call("POST", "/v1/tasks", createBody("edge", MAX_BODY_DEPTH));
    assert.equal(created.status, 201, created.text.slice(0, 300));
    assert.deepEqual(changes, ["add edge"]);
    const got = await call("GET", "/v1/tasks/edge");
    assert.equal(got.status, 200, got.text.slice(0, 300));
    assert.equal(got.body.task.variables.v, nested(MAX_BODY_DEPTH - 3));
    assert.equal((await call("GET", "/v1/tasks")).status, 200);
    assert.equal((await call("POST", "/v1/tasks", createBody("over", MAX_BODY_DEPTH + 1))).status, 400);
  });

  it("refuses deep arrays as well as deep objects", async () => {
    const { call, changes } = setup();
    const res = await call("POST", "/v1/tasks", createBody("arrays", 3000, "array"));
    assert.equal(res.status, 400, res.text.slice(0, 300));
    assert.match(res.body.error.message, /task\.variables\.v\[0\]/);
    assert.deepEqual(changes, []);
  });

  it("refuses a deep PATCH body before the task is replaced", async () => {
    const { call, changes } = setup();
    assert.equal((await call("POST", "/v1/tasks", createBody("lb", 5))).status, 201);
    const res = await call("PATCH", "/v1/tasks/lb", `{"variables":{"v":${nested(5000)}}}`);
    assert.equal(res.status, 400, res.text.slice(0, 300));
    assert.match(res.body.error.message, /nests deeper than/);
    assert.deepEqual(changes, ["add lb"]);
    assert.equal((await call("GET", "/v1/tasks/lb")).status, 200);
  });

  it("counts the levels of CTS-encoded (HCL) variables as well: a deep one is a 400, not a 500", async () => {
    const { call, changes } = setup();
    const hcl = (depth: number) => JSON.stringify("[".repeat(depth) + "1" + "]".repeat(depth));
    const body = (name: string, depth: number) => `{"task":{"name":"${name}","module":"./m","condition":{"services":{"names":["web"]}},"variables":{"v":${hcl(depth)}}}}`;
    const over = await call("POST", "/v1/tasks", body("hcl-over", MAX_BODY_DEPTH));
    assert.equal(over.status, 400, over.text.slice(0, 300));
    assert.match(over.body.error.message, /nests deeper than/);
    const deep = await call("POST", "/v1/tasks", body("hcl-deep", 5000));
    assert.equal(deep.status, 400, deep.text.slice(0, 300));
    assert.doesNotMatch(deep.body.error.message, /call stack/);
    assert.deepEqual(changes, []);
    assert.equal((await call("POST", "/v1/tasks", body("hcl-ok", MAX_BODY_DEPTH - 3))).status, 201);
  });

  it("never answers 500 nor stores a task too deep, whatever the depth from 1 to 10,000", async () => {
    const { call, views } = setup();
    let n = 0;
    const check = async (depth: number, kind: "object" | "array") => {
      const name = `t${n++}`;
      const res = await call("POST", "/v1/tasks", createBody(name, depth, kind));
      assert.ok(res.status < 500, `depth ${depth}: ${res.status} ${res.text.slice(0, 200)}`);
      if (depth > MAX_BODY_DEPTH) {
        assert.equal(res.status, 400, `depth ${depth}`);
        assert.equal(views.has(name), false, `depth ${depth}: stored`);
      } else assert.equal(res.status, 201, `depth ${depth}: ${res.text.slice(0, 200)}`);
      const list = await call("GET", "/v1/tasks");
      assert.equal(list.status, 200, `depth ${depth}: GET /v1/tasks ${list.text.slice(0, 200)}`);
    };
    // Every depth around the limit, then depths drawn from the whole range.
    for (let d = 1; d <= MAX_BODY_DEPTH + 40; d++) await check(d, "object");
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 10_000 }), fc.constantFrom("object" as const, "array" as const), (d, kind) => check(d, kind)),
      { numRuns: 150 },
    );
    await check(10_000, "object");
    await check(10_000, "array");
  });
});
