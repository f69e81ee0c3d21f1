import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { readFile, access } from "node:fs/promises";
import { join } from "node:path";
import { startDaemonApi } from "../../src/daemon/api.ts";
import { startConsul, type ConsulAgent } from "../support/consul.ts";
import { startRuntime, tempDir, waitFor, writeConfig, type TestRuntime } from "../support/cts.ts";
import { consulState, http, writeEchoModule, type HttpAnswer } from "../support/api.ts";
import { freePort } from "../support/ports.ts";

const exists = (p: string) => access(p).then(() => true, () => false);
const read = (p: string) => readFile(p, "utf8").catch(() => "");
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

function assertError(res: HttpAnswer, status: number, message: RegExp): void {
  assert.equal(res.status, status, res.text);
  assert.match(res.body.error.message, message);
  assert.match(res.body.request_id, UUID);
  assert.equal(res.headers["x-request-id"], res.body.request_id);
}

describe("the HTTP API of a running daemon (real Consul, real OpenTofu)", () => {
  let consul: ConsulAgent;
  let tmp: { dir: string; cleanup(): Promise<void> };
  let rt: TestRuntime;
  let api: { url: string; stop: () => Promise<void> };
  let members: string;
  const call = (method: string, path: string, body?: unknown, headers?: Record<string, string>) => http(api.url, method, path, body, headers);
  const moduleTask = (name: string, extra: Record<string, unknown> = {}) => ({
    task: {
      name,
      module: "./modules/echo",
      condition: { services: { names: ["web"] } },
      variables: { path: join(tmp.dir, `${name}.txt`) },
      ...extra,
    },
  });

  before(async () => {
    consul = await startConsul();
    tmp = await tempDir();
    members = join(tmp.dir, "members.txt");
    await writeEchoModule(tmp.dir);
    await consul.register({ Name: "web", ID: "web-1", Address: "10.0.0.1", Port: 80 });
    const file = await writeConfig(tmp.dir, {
      consulAddress: consul.address,
      extra: `id: "cts-api-test",`,
      tasks: [`new MemberList("members", ${JSON.stringify(members)})`, `new MemberList("idle", ${JSON.stringify(join(tmp.dir, "idle.txt"))}, "nothing")`],
    });
    rt = await startRuntime(file);
    api = await startDaemonApi(rt, { port: 0 });
    await waitFor(async () => (await read(members)).includes("web-1"), 40_000, "the first apply");
    await rt.controller.idle();
  });
  after(async () => {
    await api?.stop();
    await rt?.close();
    await consul?.stop();
    await tmp?.cleanup();
  });

  it("listens on 127.0.0.1 by default, never on every interface", () => {
    assert.match(api.url, /^http:\/\/127\.0\.0\.1:\d+$/);
  });

  it("GET /v1/status summarizes statuses and enabled counts in CTS's shape", async () => {
    const res = await call("GET", "/v1/status");
    assert.equal(res.status, 200);
    // CTS's task_summary exactly; beside it (beyond CTS) whether Consul answers and which instance this is.
    const { instance, ...cts } = res.body;
    assert.deepEqual(cts, { task_summary: { status: { successful: 2, errored: 0, critical: 0, unknown: 0 }, enabled: { true: 2, false: 0 } }, consul: { reachable: true } });
    assert.deepEqual(Object.keys(instance), ["id"]);
    assert.equal(typeof instance.id, "string");
    assert.match(String(res.headers["x-request-id"]), UUID);
  });

  it("GET /v1/status/tasks lists every task, filters by status and includes events on request", async () => {
    const all = await call("GET", "/v1/status/tasks");
    assert.equal(all.status, 200);
    assert.deepEqual(all.body.members, { task_name: "members", status: "successful", enabled: true, providers: [], services: ["web"], events_url: "/v1/status/tasks/members?include=events" });
    const one = await call("GET", "/v1/status/tasks/members?include=events");
    const ev = one.body.members.events[0];
    assert.equal(ev.task_name, "members");
    assert.equal(ev.success, true);
    assert.equal(ev.error, null);
    for (const k of ["id", "start_time", "end_time", "config"]) assert.ok(k in ev, `event has ${k}`);
    assert.deepEqual(Object.keys((await call("GET", "/v1/status/tasks?status=errored")).body), []);
    assert.deepEqual(Object.keys((await call("GET", "/v1/status/tasks?status=SUCCESSFUL")).body).sort(), ["idle", "members"]);
    assertError(await call("GET", "/v1/status/tasks/nope"), 404, /no task named 'nope'/);
    assertError(await call("GET", "/v1/status/tasks?include=everything"), 400, /unsupported value 'everything' for 'include'/);
    assertError(await call("GET", "/v1/status/tasks?status=bad"), 400, /Use status=successful/);
    assertError(await call("GET", "/v1/status/tasks?status=errored&status=critical"), 400, /given 2 times/);
  });

  it("GET /v1/tasks lists tasks defined in code in CTS's task shape", async () => {
    const res = await call("GET", "/v1/tasks");
    assert.equal(res.status, 200);
    assert.match(res.body.request_id, UUID);
    const t = res.body.tasks.find((x: { name: string }) => x.name === "members");
    assert.deepEqual(t.condition, { services: { names: ["web"], datacenter: "", namespace: "", filter: "", cts_user_defined_meta: {}, use_as_module_input: true } });
    assert.equal(t.module, "(task class MemberList)");
    assert.equal(t.origin, "config");
    assert.deepEqual(t.buffer_period, { enabled: false, min: "0s", max: "0s" }, "disabled reads 0s/0s, as in CTS");
    const one = await call("GET", "/v1/tasks/members");
    assert.deepEqual(one.body.task, t);
    assertError(await call("GET", "/v1/tasks/nope"), 404, /no task named 'nope'/);
  });

  it("refuses invalid task names in the path: '../x', spaces, empty, bad encoding", async () => {
    assertError(await call("GET", "/v1/tasks/../x"), 400, /'\.\.\/x' is not a valid task name/);
    assertError(await call("GET", "/v1/tasks/%2E%2E%2Fx"), 400, /'\.\.\/x' is not a valid task name/);
    assertError(await call("DELETE", "/v1/tasks/a%20b"), 400, /'a b' is not a valid task name/);
    assertError(await call("PATCH", "/v1/tasks/", { enabled: true }), 400, /task name is empty/);
    assertError(await call("GET", "/v1/tasks/%E0%A4%A"), 400, /not valid percent-encoding/);
  });

  it("refuses malformed JSON, wrong types, unknown fields and oversized bodies with 4xx and a message", async () => {
    assertError(await call("POST", "/v1/tasks", "{not json"), 400, /not valid JSON/);
    assertError(await call("POST", "/v1/tasks", ""), 400, /body is empty/);
    assertError(await call("POST", "/v1/tasks", "[]"), 400, /must be a JSON object/);
    assertError(await call("POST", "/v1/tasks", { name: "x", module: "m" }), 400, /wrap the task/);
    assertError(
      await call("POST", "/v1/tasks", { task: { name: "bad", module: 7, enabled: "yes", condition: { services: { names: "web" } }, buffer_period: { min: "soon" }, colour: 1 } }),
      400,
      /task\.module must be a string.*task\.enabled must be true or false.*task\.condition\.services\.names must be a non-empty list of strings.*buffer_period\.min 'soon' is not a duration/s,
    );
    assertError(await call("POST", "/v1/tasks", { task: { name: "bad", module: "m", condition: {} } }), 400, /task\.condition must have exactly one condition/);
    assertError(await call("POST", "/v1/tasks", { task: { name: "bad", module: "m", colour: 1, condition: { schedule: { cron: "* * * * *" } } } }), 400, /task\.colour is not a known field/);
    assertError(await call("POST", "/v1/tasks", moduleTask("../x")), 400, /task\.name '\.\.\/x' is not a valid task name/);
    assertError(await call("PATCH", "/v1/tasks/members", { enabled: "no" }), 400, /enabled must be true or false/);
    assertError(await call("PATCH", "/v1/tasks/members", {}), 400, /changes nothing/);
    assertError(await call("PATCH", "/v1/tasks/members", { colour: "red" }), 400, /unsupported keys: colour/);
    assertError(await call("PATCH", "/v1/tasks/members?run=later", { enabled: true }), 400, /Use run=now or run=inspect/);
    assertError(await call("DELETE", "/v1/tasks/members?destroy=maybe"), 400, /destroy=true or destroy=false/);
    const big = JSON.stringify({ task: { name: "big", module: "m", description: "x".repeat(2 * 1024 * 1024) } });
    assertError(await call("POST", "/v1/tasks", big), 413, /larger than 1048576 bytes/);
    // Chunked (no Content-Length): the limit still holds while reading.
    assertError(await call("POST", "/v1/tasks", big, { "transfer-encoding": "chunked" }), 413, /larger than/);
    assertError(await call("GET", "/v1/nothing"), 404, /no route/);
    const wrong = await call("PUT", "/v1/tasks/members", { enabled: true });
    assertError(wrong, 405, /'PUT' is not supported/);
    assert.equal(wrong.headers.allow, "GET, PATCH, DELETE");
    assert.equal((await call("GET", "/v1/tasks/members")).body.task.enabled, true, "nothing changed");
  });

  it("refuses a body nested past 64 levels (POST and PATCH) with 400 before anything is stored; reads keep answering", async () => {
    const nest = (n: number) => '{"a":'.repeat(n) + "1" + "}".repeat(n);
    const path = join(tmp.dir, "deep.txt");
    const body = `{"task":{"name":"deep","module":"./modules/echo","condition":{"services":{"names":["web"]}},"variables":{"path":${JSON.stringify(path)},"v":${nest(5000)}}}}`;
    assertError(await call("POST", "/v1/tasks?run=now", body), 400, /nests deeper than 64 levels of objects and lists \(at task\.variables\.v\.a\.a/);
    assertError(await call("GET", "/v1/tasks/deep"), 404, /no task named 'deep'/);
    assertError(await call("PATCH", "/v1/tasks/members", `{"variables":{"v":${nest(5000)}}}`), 400, /nests deeper than 64 levels/);
    const list = await call("GET", "/v1/tasks");
    assert.equal(list.status, 200, list.text.slice(0, 300));
    assert.ok(!list.body.tasks.some((t: { name: string }) => t.name === "deep"));
    assert.equal((await call("GET", "/v1/tasks/members")).status, 200);
    assert.equal((await call("GET", "/v1/status/tasks")).status, 200);
    assert.equal(await exists(path), false, "nothing ran");
  });

  it("GET /v1/health answers {} and /v1/status/cluster answers 405 without high availability", async () => {
    const health = await call("GET", "/v1/health");
    assert.equal(health.status, 200);
    assert.deepEqual(health.body, {});
    assertError(await call("GET", "/v1/status/cluster"), 405, /high availability is not configured/);
  });

  it("POST ?run=inspect plans a module task from CTS JSON and discards it", async () => {
    const res = await call("POST", "/v1/tasks?run=inspect", moduleTask("dry"));
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.inspect.changes_present, true);
    assert.match(res.body.inspect.plan, /local_file\.out/);
    assert.deepEqual(res.body.run, res.body.inspect);
    assert.equal(res.body.task.name, "dry");
    assertError(await call("GET", "/v1/tasks/dry"), 404, /no task named 'dry'/);
    assert.equal(await exists(join(tmp.dir, "dry.txt")), false, "nothing applied");
  });

  it("POST creates a module task, ?run=now applies it, and a second POST with the name is refused", async () => {
    const created = await call("POST", "/v1/tasks", moduleTask("later", { enabled: true, buffer_period: { enabled: false } }));
    assert.equal(created.status, 201, created.text);
    assert.equal(created.body.task.origin, "api");
    assert.equal(created.body.task.module, "./modules/echo");
    assert.equal(created.body.run, undefined, "not run without run=now");
    const now = await call("POST", "/v1/tasks?run=now", moduleTask("echo", { description: "echo web", buffer_period: { enabled: false } }));
    assert.equal(now.status, 201, now.text);
    assert.equal(now.body.run.outcome, "applied");
    assert.equal(await read(join(tmp.dir, "echo.txt")), "hello web-1\n");
    assert.equal((await call("GET", "/v1/status/tasks/echo")).body.echo.status, "successful");
    assertError(await call("POST", "/v1/tasks", moduleTask("echo")), 400, /already exists/);
    assertError(await call("POST", "/v1/tasks", moduleTask("members")), 400, /already exists/);
  });

  it("PATCH disables and enables a task defined in code; ?run=inspect plans without changing it", async () => {
    const off = await call("PATCH", "/v1/tasks/members", { enabled: false });
    assert.equal(off.status, 200, off.text);
    assert.equal(off.body.task.enabled, false);
    const seen = { members: rt.controller.changeCount("members"), membersRuns: rt.controller.runCount("members"), echo: rt.controller.changeCount("echo") };
    await consul.register({ Name: "web", ID: "web-2", Address: "10.0.0.2", Port: 80 });
    // echo (enabled, no buffer) watches the same service: once its change arrived and every run it
    // caused is over, members would have run too, were a disabled task still triggered.
    await waitFor(() => rt.controller.changeCount("echo") > seen.echo, 20_000, "echo to see web-2");
    await rt.controller.whenIdle();
    assert.equal(rt.controller.changeCount("members"), seen.members, "a disabled task is not told about changes");
    assert.equal(rt.controller.runCount("members"), seen.membersRuns, "a disabled task does not run");
    assert.doesNotMatch(await read(members), /web-2/);
    const plan = await call("PATCH", "/v1/tasks/members?run=inspect", { enabled: true });
    assert.equal(plan.status, 200, plan.text);
    assert.equal(plan.body.inspect.changes_present, true);
    assert.match(plan.body.inspect.plan, /web-2/);
    assert.equal((await call("GET", "/v1/tasks/members")).body.task.enabled, false, "inspect changes nothing");
    const on = await call("PATCH", "/v1/tasks/members?run=now", { enabled: true });
    assert.equal(on.status, 200, on.text);
    assert.equal(on.body.task.enabled, true);
    assert.equal(on.body.run.outcome, "applied", "the reported run is the one that applied");
    assert.match(await read(members), /web-2/);
    assertError(await call("PATCH", "/v1/tasks/members", { variables: { a: "b" } }), 400, /defined in code \(MemberList\)/);
  });

  it("PATCH replaces variables, buffer period and condition of an API-created task, then re-applies", async () => {
    const plan = await call("PATCH", "/v1/tasks/echo?run=inspect", { variables: { path: join(tmp.dir, "echo.txt"), greeting: "hi" } });
    assert.equal(plan.status, 200, plan.text);
    assert.equal(plan.body.inspect.changes_present, true);
    assert.match(plan.body.inspect.plan, /hi web-1/);
    assert.equal((await call("GET", "/v1/tasks/echo")).body.task.variables.greeting, undefined, "inspect changes nothing");
    const res = await call("PATCH", "/v1/tasks/echo?run=now", {
      variables: { path: join(tmp.dir, "echo.txt"), greeting: "hi" },
      buffer_period: { enabled: true, min: "1s", max: "2s" },
      condition: { services: { names: ["web"], filter: "Service.Port == 80" } },
    });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.run.outcome, "applied");
    assert.equal(await read(join(tmp.dir, "echo.txt")), "hi web-1,web-2\n");
    const t = (await call("GET", "/v1/tasks/echo")).body.task;
    assert.deepEqual(t.buffer_period, { enabled: true, min: "1s", max: "2s" });
    assert.equal(t.condition.services.filter, "Service.Port == 80");
    assert.equal(t.description, "echo web", "fields not in the PATCH are kept");
    assertError(await call("PATCH", "/v1/tasks/echo", { condition: { services: { names: [] } } }), 400, /task\.condition\.services\.names must be a non-empty list/);
    assertError(await call("PATCH", "/v1/tasks/echo", { name: "other" }), 400, /cannot be renamed/);
  });

  it("DELETE of a running task waits until its run has finished", async () => {
    const created = await call("POST", "/v1/tasks", moduleTask("slow", { variables: { path: join(tmp.dir, "slow.txt"), delay: 3 }, buffer_period: { enabled: false } }));
    assert.equal(created.status, 201, created.text);
    const run = call("PATCH", "/v1/tasks/slow?run=now", { enabled: true });
    await waitFor(() => rt.controller.view("slow")?.running, 20_000, "the slow run to start");
    const del = await call("DELETE", "/v1/tasks/slow");
    // What the apply leaves, read the moment the DELETE answered: the file is written only after
    // the 3 s provisioner, at the end of the run, so it is there only if the DELETE waited.
    const whenDeleted = { file: await read(join(tmp.dir, "slow.txt")), runs: rt.controller.runCount("slow") };
    assert.equal(del.status, 202, del.text);
    assert.match(del.body.request_id, UUID);
    assert.equal(whenDeleted.file, "hello web-1,web-2\n", "the DELETE answered after the run had applied");
    assert.equal(whenDeleted.runs, 1, "and after the run had finished");
    const ran = await run;
    assert.equal(ran.status, 200, ran.text);
    assert.equal(ran.body.run.outcome, "applied", "the run was not cancelled");
    assertError(await call("GET", "/v1/tasks/slow"), 404, /no task named 'slow'/);
    assertError(await call("DELETE", "/v1/tasks/slow"), 404, /no task named 'slow'/);
  });

  it("DELETE ?destroy=true destroys the task's resources and leaves an empty state in Consul", async () => {
    const before = await consulState(consul.url, "echo");
    assert.ok(before && before.resources.length > 0, "echo has resources in its state");
    const del = await call("DELETE", "/v1/tasks/echo?destroy=true");
    assert.equal(del.status, 202, del.text);
    assert.equal(del.body.destroyed, 1);
    assert.equal(await exists(join(tmp.dir, "echo.txt")), false, "the file is gone");
    const after = await consulState(consul.url, "echo");
    assert.deepEqual(after?.resources ?? [], [], "the state holds no resources");
    assertError(await call("GET", "/v1/tasks/echo"), 404, /no task named 'echo'/);
    const status = await call("GET", "/v1/status");
    assert.equal(status.body.task_summary.enabled.true + status.body.task_summary.enabled.false, 3, "members, idle, later");
  });

  it("registers itself in Consul with an HTTP check on /v1/health, and deregisters when stopped", async () => {
    const services = await consul.api("GET", "/v1/agent/services");
    const self = services["cts-api-test"];
    assert.ok(self, `registered: ${JSON.stringify(Object.keys(services))}`);
    assert.equal(self.Service, "consul-terraform-sync");
    assert.deepEqual(self.Tags, ["cts"]);
    assert.equal(`http://${self.Address}:${self.Port}`, api.url);
    const checks = await consul.api("GET", "/v1/agent/checks");
    const check = Object.values(checks as Record<string, { ServiceID: string; Type: string }>).find((c) => c.ServiceID === "cts-api-test");
    assert.equal(check?.Type, "http");
    // Consul ran the check against our /v1/health (it has been registered since before()).
    const health = await waitFor(async () => {
      const [c] = await consul.api("GET", "/v1/health/checks/consul-terraform-sync");
      return c?.Status === "passing" ? c : undefined;
    }, 25_000, "the HTTP check to pass");
    assert.equal(health.Interval, "10s");
    assert.match(health.Output, new RegExp(`${api.url}/v1/health`));
    await api.stop();
    const after = await consul.api("GET", "/v1/agent/services");
    assert.equal(after["cts-api-test"], undefined, "deregistered");
  });
});

describe("the API while Consul is unreachable", () => {
  it("answers /v1/health with 503 and keeps serving after a failed self-registration", async () => {
    const tmp = await tempDir();
    const deadConsul = `127.0.0.1:${await freePort()}`;
    const file = await writeConfig(tmp.dir, { consulAddress: deadConsul, tasks: [`new MemberList("m", ${JSON.stringify(join(tmp.dir, "m.txt"))})`] });
    const rt = await startRuntime(file, { mode: "once" });
    const api = await startDaemonApi(rt, { port: 0 });
    try {
      const health = await http(api.url, "GET", "/v1/health");
      assertError(health, 503, /unhealthy: Consul at http:\/\/127\.0\.0\.1:\d+ is unreachable/);
      assert.ok(rt.lines.some((l) => /could not register service 'consul-terraform-sync'/.test(l)), "the failed registration is logged");
      const tasks = await http(api.url, "GET", "/v1/tasks");
      assert.equal(tasks.status, 200, "the API still serves");
    } finally {
      await api.stop();
      await rt.close();
      await tmp.cleanup();
    }
  });
});
