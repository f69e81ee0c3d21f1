import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { access, readFile } from "node:fs/promises";
import { join } from "node:path";
import { startDaemonApi } from "../../src/daemon/api.ts";
import { startConsul, type ConsulAgent } from "../support/consul.ts";
import { startRuntime, tempDir, writeConfig, type TestRuntime } from "../support/cts.ts";
import { http, writeEchoModule } from "../support/api.ts";

const exists = (p: string) => access(p).then(() => true, () => false);

/**
 * A web page the operator opens must not be able to create and run tasks on a daemon with no API
 * token (the default): not with a "simple" text/plain POST, not from its own origin, not through
 * a DNS name rebound to 127.0.0.1. The CLI and curl keep working.
 */
describe("cross-site requests to a daemon without an API token (real Consul, real OpenTofu)", () => {
  const DASHBOARD = "https://dash.example:8443";
  let consul: ConsulAgent;
  let tmp: { dir: string; cleanup(): Promise<void> };
  let rt: TestRuntime;
  let api: { url: string; stop: () => Promise<void> };
  let port: string;
  const task = (name: string) =>
    JSON.stringify({ task: { name, module: "./modules/echo", condition: { services: { names: ["web"] } }, variables: { path: join(tmp.dir, `${name}.txt`) }, buffer_period: { enabled: false } } });
  const post = (name: string, headers: Record<string, string>) => http(api.url, "POST", "/v1/tasks?run=now", task(name), headers);
  const created = async (name: string) => (await http(api.url, "GET", `/v1/tasks/${name}`)).status === 200;

  before(async () => {
    consul = await startConsul();
    tmp = await tempDir();
    await writeEchoModule(tmp.dir);
    await consul.register({ Name: "web", ID: "web-1", Address: "10.0.0.1", Port: 80 });
    const file = await writeConfig(tmp.dir, { consulAddress: consul.address, tasks: [] });
    rt = await startRuntime(file);
    api = await startDaemonApi(rt, { port: 0, allowedOrigins: [DASHBOARD] }, { register: false });
    port = new URL(api.url).port;
  });
  after(async () => {
    await api?.stop();
    await rt?.close();
    await consul?.stop();
    await tmp?.cleanup();
  });

  it("refuses a cross-site POST with text/plain (415) and creates nothing", async () => {
    const res = await post("plain", { "content-type": "text/plain;charset=UTF-8", origin: "http://evil.example" });
    assert.equal(res.status, 415, res.text);
    const noOrigin = await post("plain", { "content-type": "text/plain" });
    assert.equal(noOrigin.status, 415, noOrigin.text);
    assert.equal(await created("plain"), false);
    assert.equal(await exists(join(tmp.dir, "plain.txt")), false, "nothing applied");
  });

  it("refuses a JSON POST from a foreign origin (403) and creates nothing", async () => {
    const res = await post("evil", { origin: "http://evil.example" });
    assert.equal(res.status, 403, res.text);
    assert.match(res.body.error.message, /api\.allowedOrigins/);
    assert.equal(await created("evil"), false);
  });

  it("refuses a request through a rebound DNS name (Host not this API) on writes and reads", async () => {
    const write = await post("rebound", { host: `evil.example:${port}` });
    assert.equal(write.status, 421, write.text);
    assert.match(write.body.error.message, /DNS rebinding/);
    assert.equal((await http(api.url, "GET", "/v1/status/tasks?include=events", undefined, { host: `evil.example:${port}` })).status, 421);
    assert.equal(await created("rebound"), false);
  });

  it("accepts the CLI's JSON POST without Origin (201) and applies it", async () => {
    const res = await post("cli", { host: `localhost:${port}` });
    assert.equal(res.status, 201, res.text);
    assert.equal(res.body.run.outcome, "applied");
    assert.equal(await readFile(join(tmp.dir, "cli.txt"), "utf8"), "hello web-1\n");
  });

  it("accepts a POST from the origin in api.allowedOrigins, with CORS headers for it", async () => {
    const res = await post("dash", { origin: DASHBOARD });
    assert.equal(res.status, 201, res.text);
    assert.equal(res.headers["access-control-allow-origin"], DASHBOARD);
    assert.equal(await readFile(join(tmp.dir, "dash.txt"), "utf8"), "hello web-1\n");
  });
});
