import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { startDaemonApi } from "../../src/daemon/api.ts";
import { decodeVariables } from "../../src/cts/api/variables.ts";
import { startConsul, type ConsulAgent } from "../support/consul.ts";
import { startRuntime, tempDir, waitFor, writeConfig, type TestRuntime } from "../support/cts.ts";
import { writeEchoModule } from "../support/api.ts";
import { ctsGoClient, ctsVariables, ctyJson, type GoAnswer } from "../support/cts-go-client.ts";

const read = (p: string) => readFile(p, "utf8").catch(() => "");
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** An error answer exactly as CTS's client needs it: status, `application/json`, `{"error":{"message"},"request_id"}`. */
function assertCtsError(res: GoAnswer, status: number, message: RegExp): void {
  assert.equal(res.status, status, res.text);
  assert.equal(res.contentType, "application/json");
  assert.deepEqual(Object.keys(res.body).sort(), ["error", "request_id"]);
  assert.deepEqual(Object.keys(res.body.error), ["message"]);
  assert.match(res.body.request_id, UUID);
  assert.match(res.goError!, new RegExp(`^request returned ${status} status code with error: ${message.source}`));
}

describe("CTS's own API client against a running daemon (real Consul, real OpenTofu)", () => {
  let consul: ConsulAgent;
  let tmp: { dir: string; cleanup(): Promise<void> };
  let rt: TestRuntime;
  let api: { url: string; stop: () => Promise<void> };
  let go: ReturnType<typeof ctsGoClient>;
  let out: string;
  /** The task as CTS's `task create -task-file` sends it: variables cty-encoded, all strings. */
  const ctsTask = (name: string, variables: Record<string, unknown>) => ({
    name,
    module: "./modules/echo",
    condition: { services: { names: ["web"] } },
    buffer_period: { enabled: false },
    variables: ctsVariables(variables),
  });

  before(async () => {
    consul = await startConsul();
    tmp = await tempDir();
    out = join(tmp.dir, "cts out.txt");
    await writeEchoModule(tmp.dir);
    await consul.register({ Name: "web", ID: "web-1", Address: "10.0.0.1", Port: 80 });
    const members = join(tmp.dir, "members.txt");
    const file = await writeConfig(tmp.dir, { consulAddress: consul.address, extra: `id: "cts-go-client-test",`, tasks: [`new MemberList("members", ${JSON.stringify(members)})`] });
    rt = await startRuntime(file);
    api = await startDaemonApi(rt, { port: 0 });
    go = ctsGoClient(api.url);
    await waitFor(async () => (await read(members)).includes("web-1"), 40_000, "the first apply");
    await rt.controller.idle();
  });
  after(async () => {
    await api?.stop();
    await rt?.close();
    await consul?.stop();
    await tmp?.cleanup();
  });

  it("task create's dry run (POST ?run=inspect) plans the task with its HCL-encoded variables decoded, and discards it", async () => {
    const dry = await go.createTask(ctsTask("cts_echo", { path: out, greeting: " hi " }), "inspect");
    assert.equal(dry.status, 200, dry.text);
    assert.equal(dry.contentType, "application/json");
    assert.equal(dry.body.run.changes_present, true);
    assert.match(dry.body.run.plan, /local_file\.out/);
    assert.ok(dry.body.run.plan.includes(JSON.stringify(out)), `the plan writes to the decoded path, without quotes:\n${dry.body.run.plan}`);
    assert.match(dry.body.request_id, UUID);
    assert.deepEqual(dry.body.task.variables, { path: ctyJson(out), greeting: ctyJson(" hi ") }, "the task is answered in CTS's form");
    assertCtsError(await go.getTask("cts_echo"), 404, /no task named 'cts_echo'/);
  });

  it("task create (POST ?run=now) creates and applies: the module writes to the path, not to a path with quotes", async () => {
    const res = await go.createTask(ctsTask("cts_echo", { path: out, greeting: " hi " }), "now");
    assert.equal(res.status, 201, res.text);
    assert.equal(res.contentType, "application/json");
    assert.equal(res.body.task.name, "cts_echo");
    assert.equal(res.body.task.version, "");
    assert.deepEqual(res.body.task.buffer_period, { enabled: false, min: "0s", max: "0s" });
    assert.equal(await read(out), " hi  web-1\n");
    const got = (await go.getTask("cts_echo")).body.task;
    assert.deepEqual(await decodeVariables(got.variables, "task.variables"), { path: out, greeting: " hi " }, "GET answers variables that decode to what was sent");
  });

  it("a duplicate create answers 400 with CTS's error body, which CTS's client reads", async () => {
    assertCtsError(await go.createTask(ctsTask("cts_echo", { path: out })), 400, /task with name cts_echo already exists/);
  });

  it("refuses an ambiguous or broken encoded variable with 400 and creates nothing", async () => {
    const bad = await go.createTask({ ...ctsTask("cts_bad", { path: out }), variables: { path: ctyJson(out), greeting: "0755", delay: "[1," } });
    assertCtsError(bad, 400, /invalid task: task\.variables\.greeting '0755' is ambiguous.*task\.variables\.delay looks HCL-encoded/);
    assertCtsError(await go.getTask("cts_bad"), 404, /no task named 'cts_bad'/);
  });

  it("task disable sends {\"Enabled\":false} without a Content-Type; task enable's inspect and enable follow", async () => {
    const off = await go.update("cts_echo", false);
    assert.equal(off.status, 200, off.text);
    assert.equal(off.contentType, "application/json");
    assert.equal(off.goError, undefined);
    assert.equal((await go.taskStatus("cts_echo")).body.cts_echo.enabled, false);
    await consul.register({ Name: "web", ID: "web-2", Address: "10.0.0.2", Port: 80 });
    const plan = await go.update("cts_echo", true, "inspect");
    assert.equal(plan.status, 200, plan.text);
    assert.equal(plan.body.inspect.changes_present, true);
    assert.match(plan.body.inspect.plan, /web-1,web-2/);
    assert.equal((await go.getTask("cts_echo")).body.task.enabled, false, "inspect leaves the task disabled");
    const on = await go.update("cts_echo", true, "now");
    assert.equal(on.status, 200, on.text);
    assert.equal(await read(out), " hi  web-1,web-2\n");
    assert.equal((await go.getTask("cts_echo")).body.task.enabled, true);
  });

  it("decodes keys case-insensitively as CTS's Go server does: a Go struct without JSON tags can create a task", async () => {
    const body = { Task: { Name: "go_cased", Module: "./modules/echo", Condition: { Services: { Names: ["web"] } }, Variables: { path: ctyJson(join(tmp.dir, "go_cased.txt")) } } };
    const dry = await go.raw("POST", "/v1/tasks?run=inspect", JSON.stringify(body), { "Content-Type": "application/json" });
    assert.equal(dry.status, 200, dry.text);
    assert.equal(dry.body.task.name, "go_cased");
    assert.equal(dry.body.run.changes_present, true);
    const twice = await go.raw("PATCH", "/v1/tasks/cts_echo", JSON.stringify({ enabled: true, Enabled: false }));
    assertCtsError(twice, 400, /enabled is given twice/);
  });

  it("answers CTS's status codes on every error path its clients hit", async () => {
    assertCtsError(await go.update("nope", true), 404, /no task named 'nope'/);
    assertCtsError(await go.update("nope", true, "inspect"), 404, /no task named 'nope'/);
    assertCtsError(await go.deleteTask("nope"), 404, /no task named 'nope'/);
    assertCtsError(await go.taskStatus("nope"), 404, /no task named 'nope'/);
    assertCtsError(await go.taskStatus("", { status: "bad" }), 400, /unsupported value 'bad' for 'status'/);
    assertCtsError(await go.createTask({ name: "no_condition", module: "./modules/echo" }), 400, /invalid task: task\.condition is required/);
  });

  it("status and events carry the fields CTS still returns, beside ours", async () => {
    const overall = await go.overall();
    assert.equal(overall.contentType, "application/json");
    assert.deepEqual(overall.body.task_summary.enabled, { true: 2, false: 0 });
    const status = (await go.taskStatus("cts_echo", { include: "events" })).body.cts_echo;
    assert.deepEqual(status.providers, []);
    assert.deepEqual(status.services, ["web"], "the services its events name, as CTS derives them");
    assert.equal(status.events_url, "/v1/status/tasks/cts_echo?include=events");
    const [newest] = status.events;
    assert.equal(newest.success, true);
    assert.deepEqual(newest.config.providers, []);
    assert.deepEqual(newest.config.services, ["web"]);
    assert.equal(newest.config.source, "./modules/echo");
    assert.equal(newest.outcome, "applied");
    assert.deepEqual(newest.changes, { add: 1, change: 0, destroy: 1 }, "local_file is replaced when its content changes");
  });

  it("task delete answers 202 with a request id and leaves the infrastructure", async () => {
    const del = await go.deleteTask("cts_echo");
    assert.equal(del.status, 202, del.text);
    assert.equal(del.contentType, "application/json");
    assert.match(del.body.request_id, UUID);
    await waitFor(async () => (await go.getTask("cts_echo")).status === 404, 30_000, "the task to be deleted");
    assert.equal(await read(out), " hi  web-1,web-2\n");
  });
});
