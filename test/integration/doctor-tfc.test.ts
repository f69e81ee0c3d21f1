// `cts doctor` with driver "terraform-cloud", against the TFE-API test server (and a real Consul for
// the whole run): token, organization, entitlements, TLS and reachability, each failure with its fix
// and never the token; the checks of a local Terraform are skipped with the reason.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadConfig } from "../../src/config/load.ts";
import type { CheckResult } from "../../src/doctor/check.ts";
import { runDoctor } from "../../src/doctor/doctor.ts";
import { checkTerraformCloud, type TfcDoctorInput } from "../../src/doctor/tfc-checks.ts";
import { startConsul, type ConsulAgent } from "../support/consul.ts";
import { freePort } from "../support/ports.ts";
import { startTfcServer, type TfcTestServer } from "../support/tfc-server/index.ts";
import { tools } from "../support/tools.ts";

const FAST = { attempts: 2, baseDelayMs: 1, maxDelayMs: 5 };

describe("cts doctor with the Terraform Cloud driver", () => {
  let server: TfcTestServer;

  before(async () => {
    server = await startTfcServer({ organizations: ["acme", "other"], tokens: [{ token: "team-token-of-other-only-000111", organizations: { other: "write" }, username: "api-team_abc" }] });
  });
  after(async () => {
    await server?.stop();
  });

  const check = (driver: Partial<TfcDoctorInput["driver"]>, workspaces: TfcDoctorInput["workspaces"] = []) =>
    checkTerraformCloud({ driver: { hostname: server.url, organization: "acme", token: server.token, ...driver }, dir: tmpdir(), workspaces, env: {}, retry: FAST });
  const byName = (rs: CheckResult[]) => Object.fromEntries(rs.map((r) => [r.name, r]));
  const noSecret = (rs: CheckResult[], secret: string) => assert.ok(!JSON.stringify(rs).includes(secret), "no check shows the token");

  it("passes with a good token: the server, the token's account, the organization and its entitlements", async () => {
    const rs = await check({});
    assert.deepEqual(rs.map((r) => [r.name, r.ok]), [["tfc", true], ["tfc-token", true], ["tfc-organization", true], ["tfc-entitlements", true]]);
    const r = byName(rs);
    assert.match(r.tfc!.detail, /^http:\/\/127\.0\.0\.1:\d+ answers \(API version 2\.6, plain HTTP\)$/);
    assert.equal(r["tfc-token"]!.detail, "accepted (a user token, account 'cts-admin')");
    assert.equal(r["tfc-organization"]!.detail, "'acme' exists and the token sees it");
    assert.equal(r["tfc-entitlements"]!.detail, "the organization may run tasks (operations, agents, state-storage)");
    noSecret(rs, server.token);
  });

  it("fails a bad token with the fix, and does not go on", async () => {
    const bad = "bad-token-never-shown-123456789.atlasv1.x";
    const rs = await check({ token: bad });
    assert.deepEqual(rs.map((r) => [r.name, r.ok]), [["tfc", true], ["tfc-token", false], ["tfc-organization", false], ["tfc-entitlements", false]]);
    const r = byName(rs);
    assert.match(r["tfc-token"]!.detail, /answered 401 to GET \/api\/v2\/account\/details/);
    assert.match(r["tfc-token"]!.fix!, /set a valid team API token in TFC_TOKEN/);
    assert.equal(r["tfc-organization"]!.detail, "not checked: the token was refused");
    assert.equal(r["tfc-organization"]!.fix, "fix the tfc-token check first");
    noSecret(rs, bad);
  });

  it("fails an unknown organization (or one the token may not see) with the fix", async () => {
    for (const [org, token] of [["nope", server.token], ["acme", "team-token-of-other-only-000111"]] as const) {
      const rs = await check({ organization: org, token });
      const r = byName(rs);
      assert.equal(r["tfc-token"]!.ok, true);
      assert.deepEqual([r["tfc-organization"]!.ok, r["tfc-organization"]!.detail], [false, `organization '${org}' does not exist at ${server.url}, or the token may not see it`]);
      assert.match(r["tfc-organization"]!.fix!, /check organization \(or TFC_ORGANIZATION\)/);
      assert.equal(r["tfc-entitlements"]!.detail, "not checked: the organization is not reachable");
      noSecret(rs, token);
    }
    assert.match(byName(await check({ organization: "other", token: "team-token-of-other-only-000111" }))["tfc-token"]!.detail, /a team token, account 'api-team_abc'/);
  });

  it("fails entitlements an agent-mode task needs, and skips them on a server without an entitlement set", async () => {
    server.store.entitlements.set("acme", { agents: false });
    try {
      const r = byName(await check({}, [{ task: "web", workspace: { executionMode: "agent", agentPoolName: "p" } }, { task: "db", workspace: undefined }]));
      assert.deepEqual([r["tfc-entitlements"]!.ok, r["tfc-entitlements"]!.detail], [false, "the organization's plan lacks agents (tasks 'web' run in agent mode)"]);
      assert.equal(byName(await check({}, [{ task: "db", workspace: undefined }]))["tfc-entitlements"]!.ok, true, "agents matter only to agent-mode tasks");
    } finally {
      server.store.entitlements.delete("acme");
    }
    server.faults.failRoutes = [{ method: "GET", path: /\/entitlement-set$/, status: 404 }];
    try {
      const r = byName(await check({}));
      assert.deepEqual([r["tfc-entitlements"]!.ok, r["tfc-entitlements"]!.detail], [true, "not offered by this server (no entitlement set); skipped"]);
    } finally {
      server.faults.failRoutes = [];
    }
  });

  it("fails an unreachable host with the fix, and checks nothing after it", async () => {
    const port = await freePort();
    const rs = await check({ hostname: `http://127.0.0.1:${port}` });
    assert.deepEqual(rs.map((r) => [r.name, r.ok]), [["tfc", false], ["tfc-token", false], ["tfc-organization", false], ["tfc-entitlements", false]]);
    assert.match(rs[0]!.detail, new RegExp(`Terraform Cloud at 127\\.0\\.0\\.1:${port} is unreachable`));
    assert.match(rs[0]!.fix!, /check hostname \(or TFC_HOSTNAME\)/);
    assert.equal(rs[1]!.detail, "not checked: Terraform Cloud does not answer");
  });

  it("fails a missing token before any request", async () => {
    const before = server.requests.length;
    const rs = await checkTerraformCloud({ driver: { hostname: server.url, organization: "acme" }, dir: tmpdir(), workspaces: [], env: {} });
    assert.deepEqual(rs.map((r) => [r.name, r.ok]), [["tfc-token", false]]);
    assert.match(rs[0]!.detail, /token is not set/);
    assert.equal(server.requests.length, before);
  });

  describe("over HTTPS with a private CA", () => {
    let dir: string;
    let tls: TfcTestServer;
    let ca: string;
    before(async () => {
      dir = await mkdtemp(join(tmpdir(), "cts-doctor-tls-"));
      const consul = (args: string[]) => execFileSync(tools().consul, ["tls", ...args], { cwd: dir, stdio: "ignore" });
      consul(["ca", "create"]);
      consul(["cert", "create", "-server", "-dc", "dc1", "-additional-ipaddress", "127.0.0.1"]);
      ca = join(dir, "consul-agent-ca.pem");
      tls = await startTfcServer({ https: { cert: await readFile(join(dir, "dc1-server-consul-0.pem")), key: await readFile(join(dir, "dc1-server-consul-0-key.pem")) } });
    });
    after(async () => {
      await tls?.stop();
      if (dir) await rm(dir, { recursive: true, force: true });
    });
    const tlsCheck = (t: TfcDoctorInput["driver"]["tls"]) =>
      checkTerraformCloud({ driver: { hostname: tls.url, organization: tls.organization, token: tls.token, ...(t ? { tls: t } : {}) }, dir, workspaces: [], env: {}, retry: FAST });

    it("passes with the CA and says TLS is verified; fails an unknown CA with the tls fix", async () => {
      const ok = await tlsCheck({ caCert: ca });
      assert.ok(ok.every((r) => r.ok), JSON.stringify(ok));
      assert.match(ok[0]!.detail, /TLS verified\)$/);
      assert.match((await tlsCheck({ verify: false }))[0]!.detail, /TLS without verifying the certificate\)$/);
      const bad = await tlsCheck(undefined);
      assert.deepEqual([bad[0]!.name, bad[0]!.ok], ["tfc", false]);
      assert.match(bad[0]!.detail, /TLS with Terraform Cloud at 127\.0\.0\.1:\d+ failed/);
      assert.match(bad[0]!.fix!, /tls \{ ca_cert \}/);
      const missing = await tlsCheck({ caCert: join(dir, "missing.pem") });
      assert.deepEqual([missing[0]!.name, missing[0]!.ok], ["tfc", false]);
      assert.match(missing[0]!.detail, /Cannot read driver\.terraformCloud\.tls\.caCert/);
    });
  });

  describe("the whole doctor on a CTS HCL config", () => {
    let consul: ConsulAgent;
    let dir: string;
    before(async () => {
      consul = await startConsul();
      dir = await mkdtemp(join(tmpdir(), "cts-doctor-tfc-"));
    });
    after(async () => {
      await consul?.stop();
      if (dir) await rm(dir, { recursive: true, force: true });
    });

    it("checks Consul and Terraform Cloud, keeps the state check off Consul, and skips the local Terraform checks saying why", async () => {
      const file = join(dir, "cts.hcl");
      process.env.CTS_TEST_DOCTOR_TFC_TOKEN = server.token;
      try {
        await writeFile(
          file,
          `port = ${await freePort()}
consul {
  address = "${consul.address}"
}
driver "terraform-cloud" {
  hostname     = "${server.url}"
  organization = "acme"
  token        = "{{ env \\"CTS_TEST_DOCTOR_TFC_TOKEN\\" }}"
}
task {
  name   = "web"
  module = "org/mod/x"
  condition "services" {
    names = ["web"]
  }
}
`,
        );
        const lines: string[] = [];
        const rs = await runDoctor(await loadConfig(file), (r) => lines.push(`${r.name}:${r.ok}`));
        assert.deepEqual(lines, ["consul:true", "reads:web:true", "state:true", "tfc:true", "tfc-token:true", "tfc-organization:true", "tfc-entitlements:true", "working-dir:true", "terraform:true", "providers:true", "api-port:true"]);
        const r = byName(rs);
        assert.equal(r.state!.detail, "kept in the Terraform Cloud workspaces, not in Consul");
        assert.equal(r.terraform!.detail, 'skipped: driver "terraform-cloud" runs Terraform in Terraform Cloud, not on this machine');
        noSecret(rs, server.token);
      } finally {
        delete process.env.CTS_TEST_DOCTOR_TFC_TOKEN;
      }
    });
  });
});
