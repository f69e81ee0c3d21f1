import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { contentTypeProblem, hostProblem, originProblem } from "../../src/api/browser-guard.ts";
import { apiAccessProblems, parseHost } from "../../src/config/api-access.ts";
import { createApiServer, type ApiServer } from "../../src/api/server.ts";
import type { ApiController } from "../../src/api/deps.ts";
import { createLogger } from "../../src/log/logger.ts";
import { EventStore } from "../../src/runtime/events.ts";
import type { TaskView } from "../../src/runtime/controller.ts";
import type { ModuleTaskSpec } from "../../src/synth/task-ref.ts";
import { knownSecrets, REDACTED } from "../../src/secrets/redactor.ts";
import { http } from "../support/api.ts";

const bound = { address: "127.0.0.1", port: 8558 };

describe("the Host check (DNS rebinding)", () => {
  it("accepts the bound address and the loopback names with the API's port", () => {
    for (const h of ["127.0.0.1:8558", "localhost:8558", "LOCALHOST:8558", "[::1]:8558", "localhost.:8558"]) assert.equal(hostProblem(h, bound, false), undefined, h);
  });

  it("refuses other names, other ports and a missing Host with 421 and a way out", () => {
    for (const h of ["evil.example:8558", "127.0.0.1:80", "localhost", "127.0.0.1.evil.example:8558", undefined, "a b"]) {
      const p = hostProblem(h, bound, false);
      assert.equal(p?.status, 421, String(h));
      assert.match(p!.message, /api\.allowedHosts/);
    }
  });

  it("accepts names from api.allowedHosts, on any port or the one given", () => {
    assert.equal(hostProblem("cts.internal:9000", bound, false, { allowedHosts: ["cts.internal"] }), undefined);
    assert.equal(hostProblem("cts.internal:8558", bound, false, { allowedHosts: ["cts.internal:8558"] }), undefined);
    assert.equal(hostProblem("cts.internal:9000", bound, false, { allowedHosts: ["cts.internal:8558"] })?.status, 421);
  });

  it("with a wildcard bind accepts any IP literal (no DNS name to rebind) but no foreign name", () => {
    const any = { address: "0.0.0.0", port: 8558 };
    assert.equal(hostProblem("10.1.2.3:8558", any, false), undefined);
    assert.equal(hostProblem("[fe80::1]:8558", { address: "::", port: 8558 }, false), undefined);
    assert.equal(hostProblem("rebind.evil.example:8558", any, false)?.status, 421);
  });

  it("takes the scheme's default port when Host has none", () => {
    assert.equal(hostProblem("localhost", { address: "127.0.0.1", port: 443 }, true), undefined);
    assert.deepEqual(parseHost("[::1]:80"), { name: "::1", port: 80 });
  });
});

describe("the browser checks on task-changing requests", () => {
  it("refuses a task change from a foreign Origin with 403, and lets reads and allowed origins through", () => {
    assert.equal(originProblem("POST", "http://evil.example")?.status, 403);
    assert.equal(originProblem("DELETE", "null")?.status, 403);
    assert.equal(originProblem("GET", "http://evil.example"), undefined);
    assert.equal(originProblem("POST", undefined), undefined);
    assert.equal(originProblem("PATCH", "https://Dash.example:8443", { allowedOrigins: ["https://dash.example:8443/"] }), undefined);
    assert.equal(originProblem("PATCH", "https://dash.example", { allowedOrigins: ["https://dash.example:8443"] })?.status, 403);
  });

  it("lets the API's own dashboard (same origin, Host already checked) change tasks, and no other origin", () => {
    const self = "http://127.0.0.1:8558";
    assert.equal(originProblem("PATCH", "http://127.0.0.1:8558", {}, self), undefined);
    assert.equal(originProblem("POST", "http://127.0.0.1:8559", {}, self)?.status, 403);
    assert.equal(originProblem("POST", "https://127.0.0.1:8558", {}, self)?.status, 403);
    assert.equal(originProblem("POST", "http://evil.example", {}, self)?.status, 403);
  });

  it("refuses a cross-site POST with text/plain (or a form) with 415", () => {
    for (const ct of ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", undefined]) assert.equal(contentTypeProblem("POST", ct)?.status, 415, String(ct));
    assert.equal(contentTypeProblem("PATCH", "application/json; charset=utf-8"), undefined);
    assert.equal(contentTypeProblem("POST", "Application/JSON"), undefined);
    assert.equal(contentTypeProblem("DELETE", undefined), undefined, "the CLI's DELETE has no body");
    assert.equal(contentTypeProblem("PATCH", undefined), undefined, "CTS's Go client sends its PATCH without a Content-Type (browsers preflight PATCH)");
    assert.equal(contentTypeProblem("PATCH", "text/plain")?.status, 415);
    assert.equal(contentTypeProblem("DELETE", "text/plain")?.status, 415);
    assert.equal(contentTypeProblem("GET", "text/plain"), undefined);
  });

  it("validates api.allowedOrigins and api.allowedHosts at config load", () => {
    assert.deepEqual(apiAccessProblems({ allowedOrigins: ["https://ok.example"], allowedHosts: ["cts.internal:8558"] }), []);
    const fields = apiAccessProblems({ allowedOrigins: ["*", "https://x.example/path", "nope"], allowedHosts: ["a b"] }).map((p) => p.field);
    assert.deepEqual(fields, ["api.allowedOrigins[0]", "api.allowedOrigins[1]", "api.allowedOrigins[2]", "api.allowedHosts[0]"]);
  });
});

describe("the API server refuses cross-site requests (fake controller)", () => {
  let server: ApiServer;
  let url: string;
  let port: number;
  const added: string[] = [];
  const events = new EventStore();
  const views = new Map<string, TaskView>();
  const ctrl = {
    events,
    taskNames: () => [...views.keys()],
    view: (n: string) => views.get(n),
    addModuleTask: (spec: ModuleTaskSpec) => {
      added.push(spec.name);
      views.set(spec.name, { name: spec.name, description: "", enabled: true, origin: "api", status: "unknown", condition: spec.condition, inputs: {}, bufferPeriod: { enabled: false, min: 0, max: 0 }, running: false, className: "ModuleTask", module: spec.module, spec } as TaskView);
    },
  } as unknown as ApiController;
  const task = (name: string) => JSON.stringify({ task: { name, module: "./m", condition: { services: { names: ["web"] } } } });

  before(async () => {
    server = createApiServer({ controller: ctrl, log: createLogger({ level: "error" }) }, { allowedOrigins: ["https://dash.example"] });
    ({ url, port } = await server.listen(0));
  });
  after(() => server.close());

  it("answers 415 to a text/plain POST and creates nothing", async () => {
    const res = await http(url, "POST", "/v1/tasks?run=now", task("plain"), { "content-type": "text/plain" });
    assert.equal(res.status, 415, res.text);
    assert.match(res.body.error.message, /Content-Type: application\/json/);
    assert.deepEqual(added, []);
  });

  it("answers 403 to a JSON POST from a foreign origin, and 421 to a foreign Host, on every route", async () => {
    assert.equal((await http(url, "POST", "/v1/tasks", task("evil"), { origin: "http://evil.example" })).status, 403);
    assert.equal((await http(url, "GET", "/v1/status", undefined, { host: `evil.example:${port}` })).status, 421);
    assert.equal((await http(url, "POST", "/v1/tasks", task("rebound"), { host: `evil.example:${port}` })).status, 421);
    assert.deepEqual(added, []);
  });

  it("accepts the CLI's JSON POST without Origin, and one from an allowed origin with CORS headers", async () => {
    assert.equal((await http(url, "POST", "/v1/tasks", task("cli"))).status, 201);
    const dash = await http(url, "POST", "/v1/tasks", task("dash"), { origin: "https://dash.example" });
    assert.equal(dash.status, 201, dash.text);
    assert.equal(dash.headers["access-control-allow-origin"], "https://dash.example");
    const preflight = await http(url, "OPTIONS", "/v1/tasks", undefined, { origin: "https://dash.example", "access-control-request-method": "POST" });
    assert.equal(preflight.status, 204);
    const foreign = await http(url, "OPTIONS", "/v1/tasks", undefined, { origin: "http://evil.example", "access-control-request-method": "POST" });
    assert.equal(foreign.headers["access-control-allow-origin"], undefined);
    assert.deepEqual(added, ["cli", "dash"]);
  });

  it("scrubs known secrets from every answer", async () => {
    knownSecrets.add("answer-secret-42");
    views.set("leaky", { ...views.get("cli")!, name: "leaky", description: "has answer-secret-42 inside" });
    const res = await http(url, "GET", "/v1/tasks/leaky");
    assert.doesNotMatch(res.text, /answer-secret-42/);
    assert.equal(res.body.task.description, `has ${REDACTED} inside`);
  });
});
