import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CtsError } from "../../src/errors/cts-error.ts";
import { TfcClient } from "../../src/tfc/client.ts";
import { rootModule } from "../support/tfc-server/fixtures.ts";
import { startTfcServer, type TfcTestServer } from "../support/tfc-server/index.ts";
import { tools } from "../support/tools.ts";

const FAST = { baseDelayMs: 1, maxDelayMs: 5 };
const READ_ONLY = "read-only-token-0123456789.atlasv1.abcdefghijklmnop";

/** Rejects with a CtsError of `code` whose message names `status` and never holds `secret`. */
async function refused(p: Promise<unknown>, code: string, status: string | undefined, secret: string): Promise<CtsError> {
  const err = await p.then(
    () => assert.fail(`expected ${code}`),
    (e: unknown) => e,
  );
  assert.ok(err instanceof CtsError, String(err));
  assert.equal(err.code, code, err.message);
  if (status) assert.match(err.message, new RegExp(`answered ${status}`));
  assert.ok(!err.message.includes(secret), `the token is in: ${err.message}`);
  assert.ok(!JSON.stringify(err.detail).includes(secret));
  return err;
}

describe("the TFC client's errors against the test server (by status class, token never shown)", () => {
  let server: TfcTestServer;
  let client: TfcClient;

  before(async () => {
    server = await startTfcServer({ organizations: ["acme", "hidden"], tokens: [{ token: READ_ONLY, organizations: { acme: "read" } }] });
    client = new TfcClient({ hostname: server.url, token: server.token, retry: FAST });
  });
  after(async () => {
    client?.close();
    await server?.stop();
  });

  it("401 for a bad token (JSON:API body), the token redacted even when the server echoes it", async () => {
    const bad = new TfcClient({ hostname: server.url, token: "wrong-token-9876543210.atlasv1.zyx", retry: FAST });
    server.faults.echoTokenInErrors = true;
    try {
      const err = await refused(bad.organization("acme"), "TFC_UNAUTHORIZED", "401", "wrong-token-9876543210.atlasv1.zyx");
      assert.match(err.message, /\[redacted\]/, "the echoed token was replaced");
      assert.equal(err.category, "usage");
    } finally {
      server.faults.echoTokenInErrors = false;
      bad.close();
    }
  });

  it("403 when the token may read but not change the organization; reads still work", async () => {
    const reader = new TfcClient({ hostname: server.url, token: READ_ONLY, retry: FAST });
    try {
      assert.equal((await reader.organization("acme")).name, "acme");
      await refused(reader.workspaces.create("acme", { name: "nope" }), "TFC_FORBIDDEN", "403", READ_ONLY);
    } finally {
      reader.close();
    }
  });

  it("404 for what does not exist and for what the token may not see", async () => {
    const reader = new TfcClient({ hostname: server.url, token: READ_ONLY, retry: FAST });
    try {
      await refused(reader.organization("hidden"), "TFC_NOT_FOUND", "404", READ_ONLY);
      await refused(client.organization("no-such-org"), "TFC_NOT_FOUND", "404", server.token);
      const hidden = await client.workspaces.create("hidden", { name: "secret-ws" });
      await refused(reader.workspaces.readById(hidden.id), "TFC_NOT_FOUND", "404", READ_ONLY);
      await refused(client.runs.read("run-doesnotexist"), "TFC_NOT_FOUND", "404", server.token);
    } finally {
      reader.close();
    }
  });

  it("422 for invalid settings, and a duplicate variable or workspace classified as invalid", async () => {
    await refused(client.workspaces.create("acme", { name: "bad name!" }), "TFC_INVALID", "422", server.token);
    await refused(client.workspaces.create("acme", { name: "agent-without-pool", executionMode: "agent" }), "TFC_INVALID", "422", server.token);
    const ws = await client.workspaces.create("acme", { name: "dup" });
    await refused(client.workspaces.create("acme", { name: "dup" }), "TFC_INVALID", "422", server.token);
    await client.variables.create(ws.id, { key: "k", value: "1", category: "terraform" });
    await refused(client.variables.create(ws.id, { key: "k", value: "2", category: "terraform" }), "TFC_INVALID", "422", server.token);
    assert.equal((await client.variables.set(ws.id, { key: "k", value: "2", category: "terraform" })).value, "2");
  });

  it("retries a 5xx on a read until it works, but never repeats a create", async () => {
    const ws = await client.workspaces.create("acme", { name: "flaky" });
    const path = new RegExp(`^/api/v2/workspaces/${ws.id}$`);
    server.faults.failRoutes = [{ method: "GET", path, status: 503, times: 2 }];
    const seen = server.requests.length;
    assert.equal((await client.workspaces.readById(ws.id)).name, "flaky");
    assert.deepEqual(server.requests.slice(seen).map((r) => r.status), [503, 503, 200]);

    server.faults.failRoutes = [{ method: "POST", path: /^\/api\/v2\/organizations\/acme\/workspaces$/, status: 500, times: 1 }];
    const before = server.requests.length;
    await refused(client.workspaces.create("acme", { name: "once" }), "TFC_SERVER_ERROR", "500", server.token);
    assert.equal(server.requests.length - before, 1, "a POST that failed with 500 is not sent again");
    server.faults.failRoutes = [];
  });

  it("gives up on a read after the bounded attempts; a proxy's HTML 502 is described, not dumped", async () => {
    server.faults.failRoutes = [{ method: "GET", path: /^\/api\/v2\/organizations\/acme$/, status: 502, html: true }];
    const before = server.requests.length;
    try {
      const err = await refused(client.organization("acme"), "TFC_SERVER_ERROR", "502", server.token);
      assert.match(err.message, /HTML page/);
      assert.equal(server.requests.length - before, 4, "4 attempts in all");
    } finally {
      server.faults.failRoutes = [];
    }
  });

  it("waits out 429s as X-RateLimit-Reset says, and gives up after the bounded attempts", async () => {
    server.faults.rateLimitNext = { count: 2, resetSeconds: 0.02 };
    const before = server.requests.length;
    assert.equal((await client.organization("acme")).name, "acme");
    assert.deepEqual(server.requests.slice(before).map((r) => r.status), [429, 429, 200]);

    server.faults.rateLimitNext = { count: 100, resetSeconds: 0.001 };
    const start = server.requests.length;
    await refused(client.runs.create({ workspaceId: "ws-x" }), "TFC_RATE_LIMITED", "429", server.token);
    assert.equal(server.requests.length - start, 6, "even a POST is repeated on 429 (it was not processed), 6 times at most");
    server.faults.rateLimitNext = undefined;
  });

  it("stops a call when its signal aborts", async () => {
    await assert.rejects(client.organization("acme", AbortSignal.abort()), { code: "TFC_CANCELLED" });
  });

  it("limits following a run that never finishes (TFC_RUN_TIMEOUT), then cancels it", async () => {
    const ws = await client.workspaces.create("acme", { name: "stuck", autoApply: true });
    const module = await rootModule("broken");
    server.faults.runsNeverFinish = true;
    try {
      const cv = await client.configurationVersions.uploadDirectory(ws.id, module, { intervalMs: 10 });
      const run = await client.runs.create({ workspaceId: ws.id, configurationVersionId: cv.id });
      const err = await refused(client.runs.follow(run.id, { intervalMs: 20, limitMs: 200 }), "TFC_RUN_TIMEOUT", undefined, server.token);
      assert.match(err.message, new RegExp(`${run.id} is still 'planning'`));
      const stop = new AbortController();
      const following = client.runs.follow(run.id, { intervalMs: 20, signal: stop.signal });
      stop.abort();
      await assert.rejects(following, { code: "TFC_CANCELLED" });
      await client.runs.cancel(run.id);
      assert.equal((await client.runs.follow(run.id, { intervalMs: 20 })).status, "canceled");
      await assert.rejects(client.runs.cancel(run.id), { code: "TFC_CONFLICT" });
    } finally {
      server.faults.runsNeverFinish = false;
      await rm(module, { recursive: true, force: true });
    }
  });
});

describe("the TFC client's reachability and TLS", () => {
  it("says TFC_UNREACHABLE when the server is gone", async () => {
    const server = await startTfcServer();
    const client = new TfcClient({ hostname: server.url, token: server.token, retry: FAST });
    await server.stop();
    try {
      await refused(client.ping(), "TFC_UNREACHABLE", undefined, server.token);
    } finally {
      client.close();
    }
  });

  describe("over HTTPS with a private CA", () => {
    let dir: string;
    let server: TfcTestServer;
    let ca: string;

    before(async () => {
      dir = await mkdtemp(join(tmpdir(), "cts-tfc-tls-"));
      const consul = (args: string[]) => execFileSync(tools().consul, ["tls", ...args], { cwd: dir, stdio: "ignore" });
      consul(["ca", "create"]);
      consul(["cert", "create", "-server", "-dc", "dc1", "-additional-ipaddress", "127.0.0.1"]);
      ca = join(dir, "consul-agent-ca.pem");
      server = await startTfcServer({ https: { cert: await readFile(join(dir, "dc1-server-consul-0.pem")), key: await readFile(join(dir, "dc1-server-consul-0-key.pem")) } });
    });
    after(async () => {
      await server?.stop();
      if (dir) await rm(dir, { recursive: true, force: true });
    });

    const call = async (tls: ConstructorParameters<typeof TfcClient>[0]["tls"]) => {
      const client = new TfcClient({ hostname: server.url, token: server.token, retry: FAST, ...(tls ? { tls } : {}) });
      try {
        return await client.organization(server.organization);
      } finally {
        client.close();
      }
    };

    it("trusts the server with its CA, or with verification off", async () => {
      assert.equal((await call({ caCert: ca })).name, server.organization);
      assert.equal((await call({ caPath: dir })).name, server.organization);
      assert.equal((await call({ verify: false })).name, server.organization);
      assert.equal((await call({ caCert: ca, serverName: "server.dc1.consul" })).name, server.organization);
    });

    it("refuses an unknown CA or a wrong server name (TFC_TLS_FAILED), and names an unreadable CA file", async () => {
      await refused(call(undefined), "TFC_TLS_FAILED", undefined, server.token);
      await refused(call({ caCert: ca, serverName: "other.example.com" }), "TFC_TLS_FAILED", undefined, server.token);
      assert.throws(() => new TfcClient({ hostname: server.url, token: server.token, tls: { caCert: join(dir, "missing.pem") } }), (err: any) => err.code === "TFC_TLS_FILE" && /tls\.caCert/.test(err.message));
    });
  });
});
