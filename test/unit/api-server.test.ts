import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { createApiServer, type ApiServer } from "../../src/api/server.ts";
import type { ApiController } from "../../src/api/deps.ts";
import { CtsError } from "../../src/errors/cts-error.ts";
import { createLogger } from "../../src/log/logger.ts";
import { EventStore, makeEvent } from "../../src/runtime/events.ts";
import type { RunOutcome, TaskView } from "../../src/runtime/controller.ts";
import type { ModuleTaskSpec } from "../../src/synth/task-ref.ts";
import { services } from "../../src/task/conditions.ts";
import { http } from "../support/api.ts";
import { deferred } from "../support/waits.ts";

/** An in-memory controller behind the API's interface: records calls, runs nothing. */
function fakeController() {
  const events = new EventStore();
  const calls: string[] = [];
  const views = new Map<string, TaskView>();
  /** Tasks holding a plan. */
  const held = new Set<string>();
  const view = (name: string, extra: Partial<TaskView> = {}): TaskView => ({
    name,
    description: "",
    enabled: true,
    origin: "config",
    status: events.status(name),
    condition: services({ names: ["web"] }),
    inputs: {},
    bufferPeriod: { enabled: true, min: 5000, max: 20000 },
    running: false,
    className: "WebPool",
    ...extra,
  });
  views.set("web", view("web"));
  events.add(makeEvent("web", new Date(), { success: true }));
  const ok = (task: string, outcome = "applied"): RunOutcome => ({ task, ok: true, outcome, result: { changesPresent: true, summary: { add: 1, change: 0, destroy: 0 }, output: "+ plan" } });
  const ctrl: ApiController = {
    events,
    taskNames: () => [...views.keys()],
    view: (n) => (views.has(n) ? { ...views.get(n)!, status: events.status(n) } : undefined),
    runNow: async (n) => (calls.push(`run ${n}`), ok(n)),
    setEnabled: async (n, e) => {
      calls.push(`enable ${n} ${e}`);
      views.set(n, { ...views.get(n)!, enabled: e });
    },
    planTask: async (n) => (calls.push(`plan ${n}`), ok(n, "planned")),
    addModuleTask: (spec: ModuleTaskSpec) => {
      calls.push(`add ${spec.name}`);
      views.set(spec.name, view(spec.name, { origin: "api", module: spec.module, spec, className: "ModuleTask" }));
      return undefined as never;
    },
    dryRunModuleTask: async (spec) => (calls.push(`dry ${spec.name}`), ok(spec.name, "planned")),
    deleteTask: async (n) => {
      calls.push(`delete ${n}`);
      if (n === "stuck") throw new CtsError("TERRAFORM_FAILED", "external", "destroy failed", { task: n });
      views.delete(n);
      return undefined;
    },
    replaceModuleTask: async (n) => (calls.push(`replace ${n}`), undefined as never),
    checkDrift: async (n) => (calls.push(`drift ${n}`), { ...ok(n, "drift"), drift: { state: "drifted", checkedAt: "2026-01-01T00:00:00.000Z", changes: { add: 1, change: 0, destroy: 0 } } }),
    onActivity: () => () => undefined,
    approve: async (n) => {
      if (!held.has(n)) throw new CtsError("PLAN_NOT_HELD", "usage", "holds no plan waiting for approval.", { task: n, detail: { status: 409 } });
      held.delete(n);
      calls.push(`approve ${n}`);
      return ok(n);
    },
    reject: async (n) => {
      if (!held.has(n)) throw new CtsError("PLAN_NOT_HELD", "usage", "holds no plan waiting for approval.", { task: n, detail: { status: 409 } });
      held.delete(n);
      calls.push(`reject ${n}`);
      return { task: n, hash: "h", ref: "", digest: "d", reasons: ["the plan destroys 3 resources, more than maxDestroy (1)"], why: "guards", summary: { add: 0, change: 0, destroy: 3 }, resources: [], heldAt: "2026-01-01T00:00:00.000Z" };
    },
  };
  return { ctrl, calls, views, view, held };
}

describe("the API server (fake controller)", () => {
  let server: ApiServer;
  let url: string;
  let fake: ReturnType<typeof fakeController>;
  let healthProblem: string | undefined;

  before(async () => {
    fake = fakeController();
    server = createApiServer({ controller: fake.ctrl, log: createLogger({ level: "error" }), health: async () => healthProblem, bodyLimitBytes: 1000 });
    url = (await server.listen(0)).url;
  });
  after(() => server.close());

  it("puts a fresh request id on every answer, in the header and in task bodies and errors", async () => {
    const a = await http(url, "GET", "/v1/tasks");
    const b = await http(url, "GET", "/v1/tasks/nope");
    const c = await http(url, "GET", "/v1/status");
    assert.equal(a.body.request_id, a.headers["x-request-id"]);
    assert.equal(b.body.request_id, b.headers["x-request-id"]);
    assert.ok(c.headers["x-request-id"]);
    assert.equal(c.body.request_id, undefined, "status keeps CTS's exact shape");
    assert.notEqual(a.body.request_id, b.body.request_id);
    assert.deepEqual(Object.keys(b.body).sort(), ["error", "request_id"]);
  });

  it("serves the dashboard page, its state and the drift route to the fake controller", async () => {
    const page = await http(url, "GET", "/ui/");
    assert.equal(page.status, 200);
    assert.match(String(page.headers["content-type"]), /text\/html/);
    assert.match(page.text, /<script src="\/ui\/app.js" defer><\/script>/);
    // The first paint has the tasks: rendered in by the server, with the state for the script.
    assert.match(page.text, /<span id="summary">1 task · 1 successful<\/span>/);
    assert.match(page.text, /<tr data-task="web">.*<span class="pill successful">successful<\/span>/s);
    assert.match(page.text, /<script type="application\/json" id="initial-state">\{"tasks":\[\{"name":"web"/);
    assert.doesNotMatch(page.text, /https?:\/\//, "no address outside this API");
    const js = await http(url, "GET", "/ui/app.js");
    assert.equal(js.status, 200);
    assert.match(String(js.headers["content-type"]), /javascript/);
    const state = await http(url, "GET", "/ui/state");
    assert.equal(state.status, 200);
    assert.equal(state.body.token_required, false);
    assert.equal(state.body.cluster, null);
    const web = state.body.tasks.find((t: { name: string }) => t.name === "web");
    assert.deepEqual(web.sources, [{ kind: "service", name: "web", role: "condition" }]);
    assert.equal(web.events.length, 1);
    assert.equal((await http(url, "GET", "/ui/nothing")).status, 404);
    const drift = await http(url, "POST", "/v1/tasks/web/drift", {});
    assert.equal(drift.status, 200, drift.text);
    assert.deepEqual(drift.body.drift.changes, { add: 1, change: 0, destroy: 0 });
    assert.equal(drift.body.drift.status, "drifted");
    assert.equal((await http(url, "GET", "/v1/tasks/web/drift")).status, 405);
  });

  it("streams run activity as server-sent events and ends the stream when the server closes", async () => {
    let emit!: (a: { type: "start" | "end"; task: string; kind: "run" }) => void;
    const live = createApiServer({ controller: { ...fake.ctrl, onActivity: (l) => ((emit = l), () => undefined) }, log: createLogger({ level: "error" }) });
    const liveUrl = (await live.listen(0)).url;
    const { get } = await import("node:http");
    let text = "";
    const runStarted = deferred();
    const ended = new Promise<void>((resolve) => {
      get(`${liveUrl}/ui/events`, (res) => {
        assert.equal(res.headers["content-type"], "text/event-stream");
        res.setEncoding("utf8");
        res.on("data", (d: string) => {
          text += d;
          if (text.includes("event: hello") && !text.includes("run-start")) emit({ type: "start", task: "web", kind: "run" });
          if (text.includes("event: run-start")) runStarted.resolve();
        });
        res.on("end", () => resolve());
      });
    });
    await runStarted.promise;
    assert.match(text, /event: run-start\ndata: \{"type":"start","task":"web","kind":"run"\}/);
    await live.close();
    await ended;
  });

  it("shows the HA cluster on the dashboard and says when changes need the token", async () => {
    const cluster = { cluster_name: "c1", leader: { id: "cts-a", address: "http://10.0.0.1:8558" }, members: [{ id: "cts-a", leader: true, healthy: true }] };
    const ha = createApiServer({ controller: fake.ctrl, log: createLogger({ level: "error" }), cluster: async () => cluster }, { token: "t0ken" });
    const haUrl = (await ha.listen(0)).url;
    try {
      const state = await http(haUrl, "GET", "/ui/state");
      assert.equal(state.status, 200, "reads need no token");
      assert.equal(state.body.token_required, true);
      assert.deepEqual(state.body.cluster, cluster);
      assert.equal((await http(haUrl, "POST", "/v1/tasks/web/drift", {})).status, 401);
      assert.equal((await http(haUrl, "POST", "/v1/tasks/web/drift", {}, { authorization: "Bearer t0ken" })).status, 200);
    } finally {
      await ha.close();
    }
  });

  it("approves and rejects held plans: 200 when held, 409 when nothing is held, 404 for an unknown task, the token like other writes", async () => {
    fake.held.add("web");
    const approved = await http(url, "POST", "/v1/tasks/web/approve", {});
    assert.equal(approved.status, 200, approved.text);
    assert.equal(approved.body.approve.outcome, "applied");
    assert.ok(approved.body.request_id);
    const again = await http(url, "POST", "/v1/tasks/web/approve", {});
    assert.equal(again.status, 409, again.text);
    assert.match(again.body.error.message, /holds no plan waiting for approval/);
    assert.equal((await http(url, "POST", "/v1/tasks/web/reject", {})).status, 409);
    fake.held.add("web");
    const rejected = await http(url, "POST", "/v1/tasks/web/reject", {});
    assert.equal(rejected.status, 200, rejected.text);
    assert.deepEqual(rejected.body.reject.discarded.changes, { add: 0, change: 0, destroy: 3 });
    assert.equal((await http(url, "POST", "/v1/tasks/nope/approve", {})).status, 404);
    assert.equal((await http(url, "POST", "/v1/tasks/nope/reject", {})).status, 404);
    assert.equal((await http(url, "GET", "/v1/tasks/web/approve")).status, 405);
    const guarded = createApiServer({ controller: fake.ctrl, log: createLogger({ level: "error" }) }, { token: "t0ken" });
    const gUrl = (await guarded.listen(0)).url;
    try {
      fake.held.add("web");
      assert.equal((await http(gUrl, "POST", "/v1/tasks/web/approve", {})).status, 401);
      assert.equal((await http(gUrl, "POST", "/v1/tasks/web/reject", {}, { authorization: "Bearer wrong" })).status, 403);
      assert.ok(fake.held.has("web"), "a refused call decides nothing");
      assert.equal((await http(gUrl, "POST", "/v1/tasks/web/reject", {}, { authorization: "Bearer t0ken" })).status, 200);
    } finally {
      await guarded.close();
    }
  });

  it("refuses a body over the limit with 413, declared or streamed, and stays usable", async () => {
    const big = JSON.stringify({ task: { name: "x", description: "y".repeat(2000) } });
    assert.equal((await http(url, "POST", "/v1/tasks", big)).status, 413);
    assert.equal((await http(url, "POST", "/v1/tasks", big, { "transfer-encoding": "chunked" })).status, 413);
    assert.equal((await http(url, "GET", "/v1/health")).status, 200);
  });

  it("answers 503 with the reason while unhealthy, and {} when healthy", async () => {
    healthProblem = "Consul at http://127.0.0.1:1 is unreachable";
    const bad = await http(url, "GET", "/v1/health");
    assert.equal(bad.status, 503);
    assert.match(bad.body.error.message, /unhealthy: Consul at .* is unreachable/);
    healthProblem = undefined;
    assert.deepEqual((await http(url, "GET", "/v1/health")).body, {});
  });

  it("PATCH ?run=now enables without a second queued run, then runs once", async () => {
    fake.calls.length = 0;
    fake.views.set("web", { ...fake.views.get("web")!, enabled: false });
    const res = await http(url, "PATCH", "/v1/tasks/web?run=now", { enabled: true });
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(fake.calls, ["enable web true", "run web"]);
    assert.equal(res.body.run.outcome, "applied");
  });

  it("PATCH ?run=inspect of disabling changes nothing and runs no Terraform", async () => {
    fake.calls.length = 0;
    const res = await http(url, "PATCH", "/v1/tasks/web?run=inspect", { enabled: false });
    assert.deepEqual(res.body.inspect, { changes_present: false, plan: "Disabling task 'web' changes no infrastructure." });
    assert.deepEqual(fake.calls, []);
  });

  it("POST creates, and maps runtime errors to 4xx/5xx with the runtime's message", async () => {
    const body = { task: { name: "lb", module: "./m", condition: { services: { names: ["web"] } } } };
    const created = await http(url, "POST", "/v1/tasks", body);
    assert.equal(created.status, 201, created.text);
    assert.equal(created.body.task.origin, "api");
    assert.equal((await http(url, "POST", "/v1/tasks", body)).status, 400, "a duplicate is 400, as in CTS");
    fake.views.set("stuck", fake.view("stuck"));
    const failed = await http(url, "DELETE", "/v1/tasks/stuck?destroy=true");
    assert.equal(failed.status, 500);
    assert.match(failed.body.error.message, /Task 'stuck': destroy failed/);
    assert.ok(fake.views.has("stuck"), "a failed destroy keeps the task");
  });
});

describe("the API's high-availability extension points", () => {
  it("serves the cluster status, and lets a follower refuse task changes while reads still work", async () => {
    const fake = fakeController();
    const server = createApiServer({
      controller: fake.ctrl,
      log: createLogger({ level: "error" }),
      cluster: async () => ({ cluster_name: "c1", leader: { id: "a", address: "http://10.0.0.1:8558" }, members: [] }),
      beforeChange: () => {
        throw new CtsError("HA_NOT_LEADER", "usage", "this instance is not the leader. Redirect the request to the leader: id=a", { detail: { status: 400 } });
      },
    });
    const { url } = await server.listen(0);
    try {
      const cluster = await http(url, "GET", "/v1/status/cluster");
      assert.equal(cluster.status, 200);
      assert.equal(cluster.body.cluster_name, "c1");
      assert.equal(cluster.body.request_id, cluster.headers["x-request-id"]);
      const refused = await http(url, "PATCH", "/v1/tasks/web", { enabled: false });
      assert.equal(refused.status, 400);
      assert.match(refused.body.error.message, /not the leader/);
      assert.deepEqual(fake.calls, [], "nothing changed");
      assert.equal((await http(url, "GET", "/v1/tasks/web")).status, 200);
    } finally {
      await server.close();
    }
  });

  it("shared mode: tells beforeChange which task a call changes, and PATCH {pin} goes to the pin handler on any member", async () => {
    const fake = fakeController();
    const seen: unknown[] = [];
    const pins: Array<[string, string | null]> = [];
    const server = createApiServer({
      controller: fake.ctrl,
      log: createLogger({ level: "error" }),
      beforeChange: (change) => {
        seen.push(change);
        throw new CtsError("HA_NOT_OWNER", "usage", "this instance does not run task 'web'. Redirect the request to its owner: id=b", { detail: { status: 400 } });
      },
      pin: async (task, member) => {
        pins.push([task, member]);
      },
    });
    const { url } = await server.listen(0);
    try {
      const refused = await http(url, "DELETE", "/v1/tasks/web");
      assert.equal(refused.status, 400);
      assert.deepEqual(seen, [{ method: "DELETE", task: "web" }]);
      const pinned = await http(url, "PATCH", "/v1/tasks/web", { pin: "cts-b" });
      assert.equal(pinned.status, 200, pinned.text);
      assert.deepEqual(pinned.body.task, { name: "web", pin: "cts-b" });
      assert.equal((await http(url, "PATCH", "/v1/tasks/web", { pin: null })).status, 200);
      assert.deepEqual(pins, [["web", "cts-b"], ["web", null]]);
      const mixed = await http(url, "PATCH", "/v1/tasks/web", { pin: "cts-b", enabled: false });
      assert.equal(mixed.status, 400);
      assert.match(mixed.body.error.message, /send "pin" alone/);
      assert.equal((await http(url, "PATCH", "/v1/tasks/nope", { pin: "cts-b" })).status, 404);
      assert.equal((await http(url, "PATCH", "/v1/tasks/web", { pin: 3 })).status, 400);
    } finally {
      await server.close();
    }
  });
});
