import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFile, execFileSync } from "node:child_process";
import { copyFileSync, mkdirSync, readFileSync } from "node:fs";
import { request } from "node:https";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { startConsul, type ConsulAgent } from "../support/consul.ts";
import { startRuntime, tempDir, waitFor, writeConfig, type TestRuntime } from "../support/cts.ts";
import { tools } from "../support/tools.ts";
import { startDaemonApi } from "../../src/daemon/api.ts";

const CTS = fileURLToPath(new URL("../../bin/cts.js", import.meta.url));
const TOKEN = "api-bearer-token-for-tests-0123456789";

interface Certs {
  ca: string;
  serverCert: string;
  serverKey: string;
  clientCert: string;
  clientKey: string;
}

function https(url: string, opts: { method?: string; headers?: Record<string, string>; body?: string; cert?: boolean; certs: Certs }): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method: opts.method ?? "GET",
        headers: { ...(opts.body ? { "content-type": "application/json" } : {}), ...opts.headers },
        ca: readFileSync(opts.certs.ca),
        ...(opts.cert === false ? {} : { cert: readFileSync(opts.certs.clientCert), key: readFileSync(opts.certs.clientKey) }),
      },
      (res) => {
        let text = "";
        res.on("data", (d) => (text += d));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body: text ? JSON.parse(text) : {} }));
      },
    );
    req.on("error", reject);
    req.end(opts.body);
  });
}

function cts(args: string[], env: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) =>
    execFile("node", [CTS, ...args], { env: { ...process.env, ...env } }, (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr })),
  );
}

describe("the API over mutual TLS with a bearer token on task-changing routes", () => {
  let consul: ConsulAgent;
  let tmp: { dir: string; cleanup(): Promise<void> };
  let rt: TestRuntime;
  let api: { url: string; stop(): Promise<void> };
  let certs: Certs;

  before(async () => {
    consul = await startConsul();
    tmp = await tempDir();
    const run = (args: string[]) => execFileSync(tools().consul, args, { cwd: tmp.dir, stdio: "pipe" });
    run(["tls", "ca", "create", "-domain", "cts"]);
    run(["tls", "cert", "create", "-server", "-domain", "cts", "-dc", "api", "-additional-ipaddress", "127.0.0.1"]);
    run(["tls", "cert", "create", "-client", "-domain", "cts", "-dc", "api"]);
    certs = {
      ca: join(tmp.dir, "cts-agent-ca.pem"),
      serverCert: join(tmp.dir, "api-server-cts-0.pem"),
      serverKey: join(tmp.dir, "api-server-cts-0-key.pem"),
      clientCert: join(tmp.dir, "api-client-cts-0.pem"),
      clientKey: join(tmp.dir, "api-client-cts-0-key.pem"),
    };
    await consul.register({ Name: "web", ID: "web-1", Address: "10.0.0.1", Port: 80 });
    const file = await writeConfig(tmp.dir, { consulAddress: consul.address, tasks: [`new MemberList("members", ${JSON.stringify(join(tmp.dir, "m.txt"))})`] });
    rt = await startRuntime(file);
    api = await startDaemonApi(
      rt,
      { port: 0, tls: { certFile: certs.serverCert, keyFile: certs.serverKey, caFile: certs.ca, verifyIncoming: true }, token: TOKEN },
      { register: false },
    );
    await waitFor(() => rt.controller.events.list("members").length > 0, 30_000, "the first run");
  });
  after(async () => {
    await api?.stop();
    await rt?.close();
    await consul?.stop();
    await tmp?.cleanup();
  });

  it("serves HTTPS and refuses a client without a certificate", async () => {
    assert.match(api.url, /^https:\/\/127\.0\.0\.1:\d+$/);
    await assert.rejects(https(`${api.url}/v1/status`, { certs, cert: false }), /certificate|socket hang up|ECONNRESET|alert/i);
    const ok = await https(`${api.url}/v1/status`, { certs });
    assert.equal(ok.status, 200);
  });

  it("lets reads through without a token and guards changes: 401 without, 403 wrong, 200 right", async () => {
    assert.equal((await https(`${api.url}/v1/tasks`, { certs })).status, 200);
    const patch = (headers: Record<string, string>) => https(`${api.url}/v1/tasks/members`, { method: "PATCH", body: JSON.stringify({ enabled: false }), headers, certs });
    const none = await patch({});
    assert.equal(none.status, 401);
    assert.match(none.body.error.message, /bearer token/);
    assert.equal((await patch({ authorization: "Bearer wrong" })).status, 403);
    const right = await patch({ authorization: `Bearer ${TOKEN}` });
    assert.equal(right.status, 200, JSON.stringify(right.body));
    assert.equal(rt.controller.view("members")!.enabled, false);
    assert.ok(!rt.lines.join("\n").includes(TOKEN), "the token is not logged");
  });

  it("the CLI speaks mTLS and sends the token from --token or CTS_HTTP_TOKEN", async () => {
    const tls = ["--http-addr", api.url, "--ca-cert", certs.ca, "--client-cert", certs.clientCert, "--client-key", certs.clientKey];
    const list = await cts(["task", "list", ...tls, "--json"]);
    assert.equal(list.code, 0, list.stderr);
    const noCert = await cts(["task", "list", "--http-addr", api.url, "--ca-cert", certs.ca]);
    assert.notEqual(noCert.code, 0);
    assert.match(noCert.stderr, /client certificate|TLS|certificate/i);
    const wrong = await cts(["task", "enable", "members", ...tls, "--token", "nope", "--auto-approve"]);
    assert.equal(wrong.code, 11, wrong.stderr);
    assert.match(wrong.stderr, /bearer token is not valid/);
    const right = await cts(["task", "enable", "members", ...tls, "--auto-approve"], { CTS_HTTP_TOKEN: TOKEN });
    assert.equal(right.code, 0, right.stderr);
    assert.equal(rt.controller.view("members")!.enabled, true);
  });

  it("the CLI takes CTS's TLS spellings: CTS_ADDRESS, CTS_CAPATH, CTS_CLIENT_CERT/KEY, -ca-path, -ssl-verify=false", async () => {
    const caDir = join(tmp.dir, "capath");
    mkdirSync(caDir);
    copyFileSync(certs.ca, join(caDir, "ca.pem"));
    const env = { CTS_ADDRESS: api.url, CTS_CAPATH: caDir, CTS_CLIENT_CERT: certs.clientCert, CTS_CLIENT_KEY: certs.clientKey, CTS_CACERT: "" };
    const viaEnv = await cts(["task", "list", "--json"], env);
    assert.equal(viaEnv.code, 0, viaEnv.stderr);
    assert.deepEqual(JSON.parse(viaEnv.stdout).tasks.map((t: { name: string }) => t.name), ["members"]);
    const flags = ["-http-addr", api.url, "-client-cert", certs.clientCert, "-client-key", certs.clientKey];
    const viaFlag = await cts(["task", "list", ...flags, "-ca-path", caDir], { CTS_ADDRESS: "" });
    assert.equal(viaFlag.code, 0, viaFlag.stderr);
    const untrusted = await cts(["task", "list", ...flags], { CTS_ADDRESS: "" });
    assert.equal(untrusted.code, 11, "CTS's exit code for an error");
    assert.match(untrusted.stderr, /TLS with cts at https:\/\/127\.0\.0\.1:\d+ failed/);
    const unverified = await cts(["task", "list", ...flags, "-ssl-verify=false"], { CTS_ADDRESS: "" });
    assert.equal(unverified.code, 0, unverified.stderr);
    const envUnverified = await cts(["task", "list", ...flags], { CTS_ADDRESS: "", CTS_SSL_VERIFY: "false" });
    assert.equal(envUnverified.code, 0, envUnverified.stderr);
  });
});
