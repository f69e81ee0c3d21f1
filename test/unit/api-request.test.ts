import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import type { ApiController } from "../../src/api/deps.ts";
import { ApiError } from "../../src/api/http-error.ts";
import { createApiServer } from "../../src/api/server.ts";
import { createLogger } from "../../src/log/logger.ts";
import { EventStore } from "../../src/runtime/events.ts";
import type { TaskView } from "../../src/runtime/interfaces.ts";
import { services } from "../../src/task/conditions.ts";
import { http } from "../support/api.ts";
import { parseCreateBody, parseTask } from "../../src/api/task-request.ts";
import { parsePatchBody, patchedTask } from "../../src/api/task-patch.ts";
import { specToCts } from "../../src/cts/api/shape.ts";

function apiError(fn: () => unknown, status: number, message: RegExp): void {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof ApiError, String(err));
    assert.equal(err.status, status);
    assert.match(err.message, message);
    return true;
  });
}

/** A server over one task, 'web-lb', that answers routing and checks only (no runs). */
async function routingServer(opts: { token?: string } = {}): Promise<{ url: string; close(): Promise<void> }> {
  const events = new EventStore();
  const web: TaskView = { name: "web-lb", description: "", enabled: true, origin: "config", status: "unknown", condition: services({ names: ["web"] }), inputs: {}, bufferPeriod: { enabled: false, min: 0, max: 0 }, running: false, className: "WebLb" };
  const ctrl = { events, taskNames: () => ["web-lb"], view: (n: string) => (n === "web-lb" ? web : undefined) } as unknown as ApiController;
  const server = createApiServer({ controller: ctrl, log: createLogger({ level: "error" }) }, opts);
  const { url } = await server.listen(0);
  return { url, close: () => server.close() };
}

describe("routing", () => {
  let server: Awaited<ReturnType<typeof routingServer>>;
  before(async () => (server = await routingServer()));
  after(() => server.close());
  const refused = async (method: string, path: string, status: number, message: RegExp) => {
    const a = await http(server.url, method, path);
    assert.equal(a.status, status, a.text);
    assert.match(a.body.error.message, message);
    return a;
  };

  it("matches CTS's routes and takes the task name from the raw path", async () => {
    assert.equal((await http(server.url, "GET", "/v1/status")).status, 200);
    assert.deepEqual(Object.keys((await http(server.url, "GET", "/v1/status/tasks/web-lb")).body), ["web-lb"]);
    assert.equal((await http(server.url, "GET", "/v1/tasks/web%2Dlb")).body.task.name, "web-lb");
    // destroy=TRUE is accepted in any case; the name reaches the handler decoded.
    await refused("DELETE", "/v1/tasks/a_b?destroy=TRUE", 404, /no task named 'a_b'/);
  });

  it("refuses task names that are empty, contain spaces or try to leave the path", async () => {
    await refused("GET", "/v1/tasks/", 400, /task name is empty/);
    await refused("GET", "/v1/status/tasks/", 400, /task name is empty/);
    await refused("GET", "/v1/tasks/../etc", 400, /'\.\.\/etc' is not a valid task name/);
    await refused("GET", "/v1/tasks/%2e%2e", 400, /'\.\.' is not a valid task name/);
    await refused("GET", "/v1/tasks/a%20b", 400, /'a b' is not a valid task name/);
    await refused("GET", "/v1/tasks/%zz", 400, /percent-encoding/);
    await refused("POST", "/v1/tasks/%zz/drift", 400, /percent-encoding/);
    await refused("GET", "/ui/../v1/status", 400, /not in normal form/);
  });

  it("answers unknown paths with 404 and wrong methods (HEAD too) with 405 and Allow", async () => {
    await refused("GET", "/v2/tasks", 404, /no route/);
    await refused("GET", "/v1/status/", 404, /no route/);
    await refused("PUT", "/v1/tasks", 405, /Use GET or POST/);
    await refused("GET", "/v1/tasks/web-lb/drift", 405, /Use POST/);
    assert.equal((await http(server.url, "POST", "/v1/health")).headers.allow, "GET");
    const head = await http(server.url, "HEAD", "/v1/status");
    assert.deepEqual([head.status, head.headers.allow], [405, "GET"]);
  });

  it("refuses unknown, repeated and unsupported query parameters", async () => {
    await refused("GET", "/v1/tasks?verbose=1", 400, /unknown query parameter 'verbose'. This route takes none/);
    await refused("PATCH", "/v1/tasks/x?run=later", 400, /Use run=now or run=inspect/);
    await refused("GET", "/v1/status/tasks?include=events&include=events", 400, /given 2 times/);
    await refused("POST", "/v1/tasks?destroy=true", 400, /This route takes: run/);
  });

  it("checks path, method, task name and query before the browser checks and the token", async () => {
    const guarded = await routingServer({ token: "s3cret" });
    try {
      const status = async (method: string, path: string, headers: Record<string, string> = {}) => (await http(guarded.url, method, path, undefined, headers)).status;
      const page = { "content-type": "text/plain", origin: "https://evil.example" };
      assert.equal(await status("POST", "/v2/tasks", page), 404);
      assert.equal(await status("POST", "/v1/health", page), 405);
      assert.equal(await status("DELETE", "/v1/tasks/a%20b", page), 400);
      assert.equal(await status("POST", "/v1/tasks?verbose=1", page), 400);
      assert.equal(await status("POST", "/v1/tasks", page), 415);
      assert.equal(await status("POST", "/v1/tasks", { "content-type": "application/json", origin: "https://evil.example" }), 403);
      assert.equal(await status("POST", "/v1/tasks", { "content-type": "application/json" }), 401);
    } finally {
      await guarded.close();
    }
  });
});

const ctsTask = (extra: Record<string, unknown> = {}) => ({ task: { name: "web-lb", module: "./modules/lb", condition: { services: { names: ["web"] } }, ...extra } });

describe("task bodies in CTS's JSON", () => {
  it("turns the JSON CTS users send into a module task spec", () => {
    const spec = parseCreateBody(
      ctsTask({
        description: "load balancer",
        enabled: false,
        version: "1.2.0",
        variables: { port: "8080", tags: ["a"] },
        providers: [],
        condition: { services: { names: ["web", "api"], datacenter: "dc2", filter: "Service.Meta.x == \"y\"", cts_user_defined_meta: { team: "a" }, use_as_module_input: true } },
        module_input: { consul_kv: { path: "cfg/", recurse: true } },
        buffer_period: { enabled: true, min: "2s", max: "10s" },
      }),
    );
    assert.deepEqual(spec, {
      name: "web-lb",
      module: "./modules/lb",
      description: "load balancer",
      enabled: false,
      version: "1.2.0",
      variables: { port: "8080", tags: ["a"] },
      condition: { kind: "services", query: { passingOnly: true, names: ["web", "api"], datacenter: "dc2", filter: "Service.Meta.x == \"y\"", userMeta: { team: "a" } } },
      inputs: { kv: { kind: "consul-kv", query: { recurse: true, path: "cfg/" } } },
      bufferPeriod: { min: "2s", max: "10s" },
    });
  });

  it("accepts every condition type, with CTS's API and HCL spellings", () => {
    const kind = (condition: unknown) => parseTask({ name: "t", module: "m", condition }).condition;
    assert.deepEqual(kind({ catalog_services: { regexp: "^web", node_meta: { rack: "1" } } }), { kind: "catalog-services", query: { regexp: "^web", nodeMeta: { rack: "1" } } });
    assert.equal(kind({ "catalog-services": { regexp: "" } }).kind, "catalog-services");
    assert.deepEqual(kind({ consul_kv: { path: "a/b" } }), { kind: "consul-kv", query: { recurse: false, path: "a/b" } });
    assert.deepEqual(kind({ schedule: { cron: "*/5 * * * *" } }), { kind: "schedule", cron: "*/5 * * * *" });
    assert.deepEqual(kind({ services: { names: [], regexp: "^web$" } }), { kind: "services", query: { passingOnly: true, regexp: "^web$" } });
  });

  it("names every bad field with what is wrong and how to fix it", () => {
    apiError(
      () => parseCreateBody({ task: { name: "a b", module: "", enabled: 1, variables: { count: "2", ok: null }, condition: { services: { names: [""] } }, providers: ["aws"] } }),
      400,
      /task\.name 'a b' is not a valid task name.*task\.module must not be empty.*task\.enabled must be true or false \(got 1\).*task\.providers is not supported.*task\.variables\.count is reserved.*task\.variables\.ok is null.*task\.condition\.services\.names must be a non-empty list of strings/s,
    );
    apiError(() => parseTask({ name: "t", module: "m", condition: { services: { names: ["a"], regexp: "b" } } }), 400, /sets both names and regexp/);
    apiError(() => parseTask({ name: "t", module: "m", condition: { services: { regexp: "(" } } }), 400, /task\.condition\.services\.regexp is not a valid regular expression/);
    apiError(() => parseTask({ name: "t", module: "m", condition: { consul_kv: { recurse: true } } }), 400, /task\.condition\.consul_kv\.path is required/);
    apiError(() => parseTask({ name: "t", module: "m", condition: { schedule: { cron: "nope" } } }), 400, /task\.condition\.cron/);
    apiError(() => parseTask({ name: "t", module: "m", condition: { services: { names: ["a"], use_as_module_input: false } } }), 400, /use_as_module_input false is not supported/);
    apiError(() => parseTask({ name: "t", module: "m", condition: { services: { names: ["a"] } }, module_input: { services: { names: ["b"] } } }), 400, /module_input\.services repeats the condition's type/);
    apiError(() => parseTask({ name: "t", module: "m", condition: { services: { names: ["a"] } }, buffer_period: { min: "9s", max: "1s" } }), 400, /buffer_period\.min \(9s\) is greater than max/);
    apiError(() => parseTask({ name: "t", module: "m", condition: { schedule: { cron: "* * * * *" } }, buffer_period: { min: "1s" } }), 400, /buffer_period is not used by schedule tasks/);
    apiError(() => parseTask({ name: "t", module: "m", condition: { services: { names: ["a"] } }, variable_files: ["x"] }), 400, /task\.variable_files is not supported through the API/);
    apiError(() => parseTask({ name: "t", module: "m", services: ["a"], condition: { services: { names: ["a"] } } }), 400, /task\.services is CTS's deprecated task field/);
    apiError(() => parseCreateBody({ task: {}, extra: 1 }), 400, /unsupported keys: extra/);
  });

  it("PATCH replaces the fields it names, removes fields set to null, and keeps the rest", () => {
    const current = specToCts(parseTask(ctsTask({ description: "d", variables: { a: "1" }, buffer_period: { min: "3s" } }).task));
    const patch = parsePatchBody({ enabled: false, variables: { b: "2" }, buffer_period: null }, "web-lb");
    const next = parseTask(patchedTask(current, patch));
    assert.equal(next.enabled, false);
    assert.deepEqual(next.variables, { b: "2" });
    assert.equal(next.bufferPeriod, undefined);
    assert.equal(next.description, "d");
    apiError(() => parsePatchBody({ enabled: "true" }, "x"), 400, /enabled must be true or false/);
    apiError(() => parsePatchBody({ module: null }, "x"), 400, /module cannot be removed/);
    apiError(() => parsePatchBody({ name: "y", enabled: true }, "x"), 400, /cannot be renamed/);
    apiError(() => parsePatchBody([], "x"), 400, /must be a JSON object/);
  });
});
