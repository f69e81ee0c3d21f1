// `cts doctor` against a real OpenBao: the address answers with the TLS the config gives, the token
// is valid, and each secret path the templates read is readable; a denied path is its own failed
// check naming the path and the policy rule to grant. No check shows the token or a value.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { loadConfig } from "../../src/config/load.ts";
import { runDoctor, vaultChecks } from "../../src/doctor/doctor.ts";
import type { CheckResult } from "../../src/doctor/check.ts";
import { startConsul, type ConsulAgent } from "../support/consul.ts";
import { freePort } from "../support/ports.ts";
import { tempDir } from "../support/cts.ts";
import { startVault, type VaultServer } from "../support/vault.ts";

const MODULE = fileURLToPath(new URL("../fixtures/cts-modules/env-digest", import.meta.url));

describe("cts doctor with a vault block (real OpenBao)", () => {
  let vault: VaultServer;
  let consul: ConsulAgent;
  let tmp: { dir: string; cleanup(): Promise<void> };
  let token: string;
  const pw = `doctor-pw-${randomBytes(8).toString("hex")}`;

  before(async () => {
    [vault, consul] = await Promise.all([startVault(), startConsul()]);
    tmp = await tempDir("cts-doctor-vault-");
    await vault.putV2("app", { pw });
    await vault.api("POST", "kv/db", { password: pw });
    await vault.api("PUT", "sys/policies/acl/doctor", { policy: 'path "secret/data/app" { capabilities = ["read"] }\npath "kv/db" { capabilities = ["read"] }\n' });
    token = (await vault.api("POST", "auth/token/create", { policies: ["doctor"], ttl: "1h" })).auth.client_token;
  });
  after(async () => {
    await Promise.all([vault?.stop(), consul?.stop()]);
    await tmp?.cleanup();
  });

  /** A CTS config whose task `app` reads KV v2 and KV v1, and task `other` a path the doctor policy does not grant. */
  async function config(vaultBlock: string): Promise<string> {
    const dir = join(tmp.dir, randomBytes(4).toString("hex"));
    await mkdir(dir);
    const file = join(dir, "cts.hcl");
    await writeFile(
      file,
      `port = ${await freePort()}
working_dir = "${join(dir, "sync-tasks")}"
consul {
  address = "${consul.address}"
}
${vaultBlock}
terraform_provider "local" {
  task_env {
    DB_PASSWORD = "{{ with secret \\"secret/data/app\\" }}{{ .Data.data.pw }}{{ end }}"
    DB_USER     = "{{ with secret \\"kv/db\\" }}{{ .Data.password }}{{ end }}"
  }
}
terraform_provider "local" {
  alias = "other"
  task_env {
    DB_PASSWORD = "{{ with secret \\"secret/data/other\\" }}{{ .Data.data.pw }}{{ end }}"
  }
}
task {
  name      = "app"
  module    = "${MODULE}"
  providers = ["local"]
  condition "services" {
    names = ["web"]
  }
}
task {
  name      = "other"
  module    = "${MODULE}"
  providers = ["local.other"]
  condition "services" {
    names = ["web"]
  }
}
`,
    );
    return file;
  }

  const byName = (results: CheckResult[]) => new Map(results.map((r) => [r.name, r]));
  const noSecrets = (results: CheckResult[]) => {
    const text = JSON.stringify(results);
    for (const v of [token, vault.rootToken, pw]) assert.ok(!text.includes(v), "a check shows the token or a value");
  };

  it("passes the address, the token and each readable path; a denied path fails naming the path and the rule to grant (through `cts doctor`'s full run)", async () => {
    const results = await runDoctor(await loadConfig(await config(`vault {\n  address = "${vault.address}"\n  token   = "${token}"\n}`)));
    const r = byName(results);
    assert.equal(r.get("vault")?.ok, true, JSON.stringify(r.get("vault")));
    assert.match(r.get("vault")!.detail, /answers, plain HTTP/);
    assert.equal(r.get("vault-token")?.ok, true, JSON.stringify(r.get("vault-token")));
    assert.match(r.get("vault-token")!.detail, /the token is valid \(\d+s left, renewable\)/);
    assert.equal(r.get("vault-read:secret/data/app")?.ok, true);
    assert.equal(r.get("vault-read:kv/db")?.ok, true);
    const denied = r.get("vault-read:secret/data/other")!;
    assert.equal(denied.ok, false);
    assert.equal(denied.detail, "the token may not read 'secret/data/other' (read by task 'other')");
    assert.equal(denied.fix, 'grant it in a policy of the token: path "secret/data/other" { capabilities = ["read"] }');
    // The Vault checks come after Consul's and before the local ones.
    const names = results.map((x) => x.name);
    assert.ok(names.indexOf("vault") > names.indexOf("consul") && names.indexOf("vault-read:secret/data/other") < names.indexOf("api-port"), names.join(", "));
    noSecrets(results);
  });

  it("fails the token check for a token Vault does not know, and does not check the paths", async () => {
    const results = await vaultChecks(await loadConfig(await config(`vault {\n  address = "${vault.address}"\n  token   = "not-a-token-${randomBytes(6).toString("hex")}"\n}`)));
    const r = byName(results);
    assert.equal(r.get("vault")?.ok, true);
    assert.equal(r.get("vault-token")?.ok, false);
    assert.match(r.get("vault-token")!.detail, /Vault does not accept the token/);
    assert.match(r.get("vault-token")!.fix!, /VAULT_TOKEN/);
    for (const p of ["secret/data/app", "kv/db", "secret/data/other"]) assert.match(r.get(`vault-read:${p}`)!.detail, /not checked: the token is not valid/);
    assert.ok(!JSON.stringify(results).includes("not-a-token"), "the token is not shown");
  });

  it("fails the address check when nothing answers there, naming the address", async () => {
    const address = `http://127.0.0.1:${await freePort()}`;
    const r = byName(await vaultChecks(await loadConfig(await config(`vault {\n  address = "${address}"\n  token   = "${token}"\n}`))));
    assert.equal(r.get("vault")?.ok, false);
    assert.match(r.get("vault")!.detail, new RegExp(`Vault at ${address} cannot be reached`));
    assert.match(r.get("vault")!.fix!, /vault\.address/);
    assert.equal(r.get("vault-token")?.ok, false);
    assert.match(r.get("vault-token")!.detail, /not checked: Vault is not reachable/);
  });

  it("talks TLS as configured: without the CA the certificate is refused and the fix names ca_cert/ca_path; with it every check passes", async () => {
    const tls = await startVault({ tls: true });
    try {
      await tls.putV2("app", { pw });
      await tls.api("POST", "kv/db", { password: pw });
      await tls.api("POST", "kv/other", { password: pw });
      await tls.putV2("other", { pw });
      const noCa = byName(await vaultChecks(await loadConfig(await config(`vault {\n  address = "${tls.address}"\n  token   = "${tls.rootToken}"\n}`))));
      assert.equal(noCa.get("vault")?.ok, false);
      assert.match(noCa.get("vault")!.fix!, /ca_cert or ca_path/);
      const withCa = await vaultChecks(
        await loadConfig(await config(`vault {\n  address = "${tls.address}"\n  token   = "${tls.rootToken}"\n  tls {\n    ca_cert = "${join(tls.tlsDir!, "vault-ca.pem")}"\n  }\n}`)),
      );
      const r = byName(withCa);
      assert.match(r.get("vault")!.detail, /answers, TLS verified/);
      for (const x of withCa) assert.equal(x.ok, true, JSON.stringify(x));
      assert.ok(!JSON.stringify(withCa).includes(tls.rootToken));
    } finally {
      await tls.stop();
    }
  });
});
