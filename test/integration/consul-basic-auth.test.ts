import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { readFile, readdir } from "node:fs/promises";
import { join } from "node:path";
import { startAuthProxy, type AuthProxy } from "../support/auth-proxy.ts";
import { startConsul, type ConsulAgent } from "../support/consul.ts";
import { startRuntime, tempDir, waitFor, writeConfig } from "../support/cts.ts";
import { createConsulClient } from "../../src/consul/client.ts";

const read = (p: string) => readFile(p, "utf8").catch(() => "");

async function filesHolding(dir: string, needle: string): Promise<string[]> {
  const hits: string[] = [];
  for (const e of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (!e.isFile()) continue;
    const p = join(e.parentPath, e.name);
    if ((await readFile(p).catch(() => undefined))?.includes(needle)) hits.push(p);
  }
  return hits;
}

describe("Consul behind a reverse proxy with HTTP basic auth (consul.auth)", { timeout: 240_000 }, () => {
  const USER = "cts";
  const PASSWORD = `pw-${process.pid}-${Date.now()}`;
  let consul: ConsulAgent;
  let proxy: AuthProxy;
  let tmp: { dir: string; cleanup(): Promise<void> };

  before(async () => {
    consul = await startConsul();
    proxy = await startAuthProxy(consul.address, USER, PASSWORD);
    tmp = await tempDir();
    await consul.register({ Name: "web", ID: "web-1", Address: "10.0.0.1", Port: 80 });
  });
  after(async () => {
    await proxy?.stop();
    await consul?.stop();
    await tmp?.cleanup();
  });

  it("watches, applies and keeps Terraform's state through the proxy with the right credentials; the password is never logged or written", async () => {
    const members = join(tmp.dir, "members.txt");
    const file = await writeConfig(tmp.dir, {
      consulAddress: proxy.url,
      extra: `consul: { address: ${JSON.stringify(proxy.url)}, auth: { username: ${JSON.stringify(USER)}, password: ${JSON.stringify(PASSWORD)} } },`,
      tasks: [`new MemberList("members", ${JSON.stringify(members)})`],
    });
    const rt = await startRuntime(file);
    try {
      await waitFor(async () => (await read(members)).includes("web-1"), 60_000, "the first apply through the proxy");
      await consul.register({ Name: "web", ID: "web-2", Address: "10.0.0.2", Port: 80 });
      await waitFor(async () => (await read(members)).includes("web-2"), 60_000, "the change seen by a blocking query through the proxy");
    } finally {
      await rt.close();
    }
    const once = await startRuntime(file, { mode: "once" });
    try {
      const results = await once.controller.once();
      for (const r of results) assert.equal(r.ok, true, r.error?.message);
      assert.ok(!once.lines.join("\n").includes(PASSWORD), "once mode: not in the logs");
    } finally {
      await once.close();
    }
    const state = await consul.api("GET", "/v1/kv/consul-terraform-sync/terraform-env:members");
    assert.equal(state.length, 1, "Terraform's consul backend stored its state through the proxy (CONSUL_HTTP_AUTH)");
    const log = await proxy.accessLog();
    assert.match(log, /^cts 200 GET \/v1\/health\/service\/web/m, "the watch's queries went through the proxy as the user");
    assert.match(log, /^cts 200 (GET|PUT) \/v1\/kv\/consul-terraform-sync\/terraform-env:members/m, "so did Terraform's backend");
    const anonymous = log.split("\n").filter((l) => l.startsWith("- "));
    assert.deepEqual(anonymous, ["- 401 GET /v1/status/leader"], "no request went without credentials but the proxy's own readiness probe");
    const logs = rt.lines.join("\n");
    const basic = Buffer.from(`${USER}:${PASSWORD}`).toString("base64");
    assert.ok(!logs.includes(PASSWORD) && !logs.includes(basic), "not in the logs");
    assert.deepEqual(await filesHolding(join(tmp.dir, "sync-tasks"), PASSWORD), [], "not in any working-dir file");
  });

  for (const [what, auth] of [
    ["a wrong password", { username: USER, password: "wrong" }],
    ["no credentials", undefined],
  ] as const) {
    it(`refuses ${what} with an error that names consul.auth and CONSUL_HTTP_AUTH`, async () => {
      const api = createConsulClient({ address: proxy.url, ...(auth ? { auth } : {}) }, {});
      try {
        // A call of the package's API and a raw GET of the watch alike.
        await assert.rejects(api.catalogServices({}), (e: any) => e.code === "CONSUL_AUTH_FAILED" && /HTTP 401/.test(e.message) && /consul\.auth/.test(e.message) && /CONSUL_HTTP_AUTH=user:pass/.test(e.message));
        await assert.rejects(api.healthService({ service: "web" } as any), (e: any) => e.code === "CONSUL_AUTH_FAILED");
      } finally {
        api.close();
      }
    });
  }
});
