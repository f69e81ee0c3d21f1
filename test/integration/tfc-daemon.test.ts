import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { readdir, readFile, writeFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { join } from "node:path";
import { loadConfig } from "../../src/config/load.ts";
import { startDaemonApi } from "../../src/daemon/api.ts";
import { createRuntime, type Runtime } from "../../src/daemon/compose.ts";
import { createLogger } from "../../src/log/logger.ts";
import { TfcClient } from "../../src/tfc/client.ts";
import { http } from "../support/api.ts";
import { writeEchoModule } from "../support/api.ts";
import { startConsul, type ConsulAgent } from "../support/consul.ts";
import { FIXTURE_TASKS, PUBLIC_API, tempDir, waitFor } from "../support/cts.ts";
import { startTfcServer, type TfcTestServer } from "../support/tfc-server/index.ts";

const read = (p: string) => readFile(p, "utf8").catch(() => "");
const CTS = fileURLToPath(new URL("../../bin/cts.js", import.meta.url));

function cts(args: string[], address: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile("node", [CTS, ...args], { env: { ...process.env, CTS_ADDRESS: address } }, (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }));
  });
}

describe("a watching daemon on the Terraform Cloud driver: catalog changes become runs, seen in events, the API and metrics", () => {
  let server: TfcTestServer;
  let consul: ConsulAgent;
  let tmp: { dir: string; cleanup(): Promise<void> };
  let rt: Runtime;
  let api: { url: string; stop: () => Promise<void> };
  let admin: TfcClient;
  let members: string;
  const lines: string[] = [];
  const call = (method: string, path: string, body?: unknown) => http(api.url, method, path, body);

  before(async () => {
    [server, consul, tmp] = await Promise.all([startTfcServer(), startConsul(), tempDir("cts-tfc-daemon-")]);
    admin = new TfcClient({ hostname: server.url, token: server.token });
    members = join(tmp.dir, "members.txt");
    await writeEchoModule(tmp.dir);
    await writeFile(join(tmp.dir, "token"), `${server.token}\n`, { mode: 0o600 });
    await consul.register({ Name: "web", ID: "web-1", Address: "10.0.0.1", Port: 80 });
    const file = join(tmp.dir, "cts.config.ts");
    await writeFile(
      file,
      `import { defineConfig } from ${JSON.stringify(PUBLIC_API)};
import { MemberList } from ${JSON.stringify(FIXTURE_TASKS)};
export default defineConfig({
  consul: { address: ${JSON.stringify(consul.address)} },
  driver: { terraformCloud: { hostname: ${JSON.stringify(server.url)}, organization: ${JSON.stringify(server.organization)}, token: { file: "token" }, workspaces: { prefix: "cts-" } } },
  api: { port: 0 },
  tasks: [new MemberList("members", ${JSON.stringify(members)})],
});
`,
    );
    rt = createRuntime(await loadConfig(file), { mode: "watch", log: createLogger({ level: "debug", write: (l) => lines.push(l) }), retries: 0 });
    await rt.controller.watch();
    api = await startDaemonApi(rt, { port: 0 }, { driver: "terraformCloud" });
    await waitFor(async () => (await read(members)).includes("web-1"), 120_000, "the first run");
    await rt.controller.idle();
  });
  after(async () => {
    await api?.stop();
    await rt?.close();
    admin?.close();
    await Promise.all([server?.stop(), consul?.stop()]);
    await tmp?.cleanup();
  });

  it("a catalog change queues a run; the event and GET /v1/status/tasks carry its URL; /metrics counts it", async () => {
    await consul.register({ Name: "web", ID: "web-2", Address: "10.0.0.2", Port: 80 });
    await waitFor(async () => (await read(members)).includes("web-2"), 120_000, "the change applied");
    await waitFor(() => rt.controller.events.list("members").length >= 2, 60_000, "the second event");
    const event = rt.controller.events.list("members")[0]!;
    assert.deepEqual([event.success, event.outcome, event.changes], [true, "applied", { add: 1, change: 0, destroy: 1 }]);
    assert.match(event.run_url!, new RegExp(`^${server.url}/app/cts-test/workspaces/cts-members/runs/run-`));
    const status = await call("GET", "/v1/status/tasks/members?include=events");
    assert.equal(status.body.members.status, "successful");
    assert.equal(status.body.members.events[0].run_url, event.run_url);
    const metrics = await (await fetch(`${api.url}/metrics`)).text();
    assert.match(metrics, /cts_task_runs_total\{task="members",outcome="applied"\} [2-9]/);
    assert.match(metrics, /cts_task_run_phase_duration_seconds_count\{task="members",phase="plan"\} [2-9]/);
    assert.match(metrics, /cts_task_run_phase_duration_seconds_count\{task="members",phase="apply"\} [2-9]/);
  });

  it("PATCH ?run=inspect answers the speculative run's url", async () => {
    const res = await call("PATCH", "/v1/tasks/members?run=inspect", { enabled: true });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.inspect.changes_present, false);
    assert.match(res.body.inspect.url, /\/workspaces\/cts-members\/runs\/run-/);
  });

  it("cts task create prints the inspection's and the run's URLs; cts status --events shows each run's URL", async () => {
    const address = new URL(api.url).host;
    const file = join(tmp.dir, "cli_task.hcl");
    await writeFile(file, `task "cli_task" {\n  module = "./modules/echo"\n  condition "services" {\n    names = ["web"]\n  }\n  variables = {\n    path = ${JSON.stringify(join(tmp.dir, "cli.txt"))}\n  }\n}\n`);
    const r = await cts(["task", "create", "--task-file", file, "--auto-approve"], address);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /Inspection results can also be viewed at: http:\/\/127\.0\.0\.1:\d+\/app\/cts-test\/workspaces\/cts-cli_task\/runs\/run-/);
    assert.match(r.stdout, /Terraform Cloud Run URL: http:\/\/127\.0\.0\.1:\d+\/app\/cts-test\/workspaces\/cts-cli_task\/runs\/run-/);
    assert.equal(await read(join(tmp.dir, "cli.txt")), "hello web-1,web-2\n");
    const s = await cts(["status", "members", "--events"], address);
    assert.equal(s.code, 0, s.stderr);
    assert.match(s.stdout, /run: http:\/\/127\.0\.0\.1:\d+\/app\/cts-test\/workspaces\/cts-members\/runs\/run-/);
  });

  it("POST /v1/tasks?run=now creates a module task's workspace and answers tfc_run_url; DELETE keeps the workspace and what it built", async () => {
    const out = join(tmp.dir, "api.txt");
    const res = await call("POST", "/v1/tasks?run=now", { task: { name: "api-task", module: "./modules/echo", condition: { services: { names: ["web"] } }, variables: { path: out } } });
    assert.equal(res.status, 201, res.text);
    assert.match(res.body.run.tfc_run_url, /\/workspaces\/cts-api-task\/runs\/run-/);
    assert.equal(await read(out), "hello web-1,web-2\n");
    assert.equal((await call("DELETE", "/v1/tasks/api-task")).status, 202);
    await waitFor(async () => (await call("GET", "/v1/tasks/api-task")).status === 404, 60_000, "the task deleted");
    assert.ok(await admin.workspaces.read(server.organization, "cts-api-task"), "the workspace stays");
    assert.equal(await read(out), "hello web-1,web-2\n", "the infrastructure stays");
    assert.equal(lines.some((l) => l.includes(server.token)), false, "the token is in no log line");
  });

  it("POST /v1/tasks takes CTS's terraform_cloud_workspace into the workspace; a server fault echoing the token leaves it in no answer, event, log line or file", async () => {
    const task = { name: "ws-task", module: "./modules/echo", condition: { services: { names: ["web"] } }, variables: { path: join(tmp.dir, "ws.txt") }, terraform_cloud_workspace: { execution_mode: "remote", terraform_version: "1.9.0" } };
    server.faults.echoTokenInErrors = true;
    server.faults.failRoutes = [{ method: "POST", path: /\/configuration-versions$/, status: 500 }];
    try {
      const res = await call("POST", "/v1/tasks?run=now", { task });
      assert.equal(res.status, 500, res.text);
      assert.match(res.text, /first run failed/);
      assert.equal(res.text.includes(server.token), false, "the API answer");
    } finally {
      server.faults.echoTokenInErrors = false;
      server.faults.failRoutes = [];
    }
    const ws = (await admin.workspaces.read(server.organization, "cts-ws-task"))!;
    assert.deepEqual([ws.executionMode, ws.terraformVersion], ["remote", "1.9.0"]);
    const events = rt.controller.events.list("ws-task");
    assert.equal(events[0]?.success, false);
    assert.equal(JSON.stringify(events).includes(server.token), false, "the events");
    const status = await call("GET", "/v1/status/tasks/ws-task?include=events");
    assert.equal(status.text.includes(server.token), false, "the status answer");
    assert.equal(lines.some((l) => l.includes(server.token)), false, "the log");
    for (const f of await readdir(tmp.dir, { recursive: true })) {
      if (f === "token") continue;
      const text = await readFile(join(tmp.dir, f), "utf8").catch(() => "");
      assert.equal(text.includes(server.token), false, `the file ${f}`);
    }
    assert.equal((await call("DELETE", "/v1/tasks/ws-task")).status, 202);
    await waitFor(async () => (await call("GET", "/v1/tasks/ws-task")).status === 404, 60_000, "the task deleted");
  });

  it("a drift check is a speculative plan: a file changed out of band shows as drift, nothing is applied", async () => {
    await writeFile(members, "changed by hand\n");
    const outcome = await rt.controller.checkDrift("members");
    assert.equal(outcome.ok, true, outcome.error?.message);
    assert.equal(outcome.outcome, "drift");
    assert.equal(outcome.drift?.state, "drifted");
    assert.match(outcome.result!.url!, /\/workspaces\/cts-members\/runs\/run-/);
    assert.equal((await admin.runs.read(outcome.result!.url!.split("/").at(-1)!)).planOnly, true);
    assert.equal(await read(members), "changed by hand\n");
  });
});
