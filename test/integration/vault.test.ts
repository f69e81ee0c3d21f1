import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { createHash, randomBytes } from "node:crypto";
import { mkdir, readdir, readFile, stat, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { startConsul, type ConsulAgent } from "../support/consul.ts";
import { runsOf, startRuntime, tempDir, waitFor, writeConfig, type TestRuntime } from "../support/cts.ts";
import { execa } from "execa";
import { CTS_BIN } from "../support/cts-process.ts";
import { tools } from "../support/tools.ts";
import { startVault, type VaultServer } from "../support/vault.ts";
import { startCountingProxy } from "../support/counting-proxy.ts";

const MODULE = fileURLToPath(new URL("../fixtures/cts-modules/env-digest", import.meta.url));
const sha = (s: string) => createHash("sha256").update(s).digest("hex");
const secretText = (what: string) => `${what}-${randomBytes(12).toString("hex")}`;

/** Every file under `dir` (symlinks not followed), with its text. */
async function filesUnder(dir: string): Promise<Array<{ file: string; text: string }>> {
  const out: Array<{ file: string; text: string }> = [];
  for (const e of await readdir(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...(await filesUnder(p)));
    else if (e.isFile() && (await stat(p)).size < 50_000_000) out.push({ file: p, text: (await readFile(p)).toString("latin1") });
  }
  return out;
}

/** Lines the module appended: one "<sha pw> <sha v1> <sha key>" per apply. */
async function seen(file: string): Promise<string[]> {
  try {
    return (await readFile(file, "utf8")).trim().split("\n").filter(Boolean);
  } catch {
    return [];
  }
}

describe("Vault secrets and Consul keys in terraform_provider blocks (real OpenBao, Consul and OpenTofu)", () => {
  let vault: VaultServer;
  let consul: ConsulAgent;
  before(async () => {
    [vault, consul] = await Promise.all([startVault(), startConsul()]);
    await consul.register({ Name: "web", ID: "web-1", Port: 80 });
    await vault.api("PUT", "sys/policies/acl/cts", { policy: 'path "secret/data/app" { capabilities = ["read"] }\npath "kv/db" { capabilities = ["read"] }\n' });
  });
  after(async () => {
    await Promise.all([vault?.stop(), consul?.stop()]);
  });

  /** A CTS config: task `app` reads KV v2, KV v1 and a Consul key; task `denied` a path its token may not read. */
  async function hclConfig(dir: string, vaultBlock: string, withDenied = true): Promise<string> {
    const bin = join(dir, "bin");
    await mkdir(bin);
    await symlink(tools().tofu, join(bin, "terraform"));
    await writeFile(join(dir, "app.tfvars"), `out = "${join(dir, "app.seen")}"\n`);
    await writeFile(join(dir, "denied.tfvars"), `out = "${join(dir, "denied.seen")}"\n`);
    const file = join(dir, "cts.hcl");
    await writeFile(
      file,
      `port        = 0
working_dir = "${join(dir, "sync-tasks")}"
buffer_period {
  enabled = false
}
consul {
  address = "${consul.address}"
}
${vaultBlock}
driver "terraform" {
  path = "${bin}"
}
terraform_provider "local" {
  task_env {
    DB_PASSWORD = "{{ with secret \\"secret/data/app\\" }}{{ .Data.data.pw }}{{ end }}"
    DB_USER     = "{{- with secret \\"kv/db\\" -}} {{ .Data.password }} {{- end -}}"
    APP_COLOR   = "{{ key \\"cfg/color\\" }}"
  }
}
terraform_provider "local" {
  alias = "denied"
  task_env {
    DB_PASSWORD = "{{ with secret \\"secret/data/denied\\" }}{{ .Data.data.pw }}{{ end }}"
  }
}
task {
  name           = "app"
  module         = "${MODULE}"
  providers      = ["local"]
  variable_files = ["${join(dir, "app.tfvars")}"]
  condition "services" {
    names = ["web"]
  }
}
${
  withDenied
    ? `task {
  name           = "denied"
  module         = "${MODULE}"
  providers      = ["local.denied"]
  variable_files = ["${join(dir, "denied.tfvars")}"]
  condition "services" {
    names = ["web"]
  }
}
`
    : ""
}`,
    );
    return file;
  }

  it("renders KV v2, KV v1 and {{ key }} at start, re-runs the task when a secret rotates or the key changes, renews the token, refuses a denied path, and never writes or logs a value", async () => {
    const tmp = await tempDir();
    const previousCli = process.env.TF_CLI_CONFIG_FILE;
    process.env.TF_CLI_CONFIG_FILE = tools().cliConfig;
    let rt: TestRuntime | undefined;
    try {
      const pw1 = secretText("kv2-pw");
      const user1 = secretText("kv1-user");
      const color1 = secretText("key-color");
      await vault.putV2("app", { pw: pw1 });
      // KV v1 answers a "ttl" field as the secret's lease: cts reads it again before that ends (as CTS).
      await vault.api("POST", "kv/db", { password: user1, ttl: "2s" });
      await consul.api("PUT", "/v1/kv/cfg/color", color1);
      // A token that expires in 6 s unless renewed: the daemon must keep it alive.
      const created = await vault.api("POST", "auth/token/create", { policies: ["cts"], ttl: "6s", renewable: true, no_default_policy: false });
      const token: string = created.auth.client_token;
      const file = await hclConfig(tmp.dir, `vault {\n  address = "${vault.address}"\n  token   = "${token}"\n}`);
      rt = await startRuntime(file);
      const out = join(tmp.dir, "app.seen");
      await waitFor(async () => (await seen(out)).length >= 1, 180_000, "the first apply of task app");
      assert.equal((await seen(out))[0], `${sha(pw1)} ${sha(user1)} ${sha(color1)}`);

      // The denied path: the run fails with Vault's 403, named; the other task was not held up.
      const denied = await waitFor(() => runsOf(rt!, "denied").find((e) => !e.success), 120_000, "the failed run of task denied");
      assert.match(denied!.error?.message ?? "", /Vault denied 'secret\/data\/denied' \(403: permission denied\)/);
      assert.deepEqual(await seen(join(tmp.dir, "denied.seen")), []);

      // Rotation of the KV v1 secret while the daemon runs: a new apply with the new value.
      const user2 = secretText("kv1-user");
      await vault.api("POST", "kv/db", { password: user2, ttl: "2s" });
      await waitFor(async () => (await seen(out)).some((l) => l === `${sha(pw1)} ${sha(user2)} ${sha(color1)}`), 180_000, "a run with the rotated KV v1 secret");

      // A changed Consul key: a new apply with the new value.
      const color2 = secretText("key-color");
      await consul.api("PUT", "/v1/kv/cfg/color", color2);
      await waitFor(async () => (await seen(out)).some((l) => l === `${sha(pw1)} ${sha(user2)} ${sha(color2)}`), 180_000, "a run with the changed key");

      // The token was renewed (renew-self), so it is still valid past its first TTL.
      await waitFor(async () => {
        const info = await vault.api("POST", "auth/token/lookup", { token });
        return Boolean(info.data.last_renewal_time) || Boolean(info.data.last_renewal);
      }, 60_000, "a renewal of the token");

      // No value anywhere: log lines, events, task views, files under the working dir, Consul KV (state).
      const values = [pw1, user1, user2, color1, color2, token];
      const texts: Array<{ where: string; text: string }> = [
        { where: "log", text: rt.lines.join("\n") },
        { where: "events", text: JSON.stringify([...runsOf(rt, "app"), ...runsOf(rt, "denied")]) },
        { where: "views", text: JSON.stringify([rt.controller.view("app"), rt.controller.view("denied")]) },
        ...(await filesUnder(join(tmp.dir, "sync-tasks"))).map((f) => ({ where: f.file, text: f.text })),
      ];
      const kv = (await consul.api("GET", "/v1/kv/?recurse")) as Array<{ Key: string; Value: string | null }>;
      // The key the template reads holds its value, of course; everything else in Consul (the state) must not.
      for (const e of kv) if (e.Value && e.Key !== "cfg/color") texts.push({ where: `consul kv ${e.Key}`, text: Buffer.from(e.Value, "base64").toString("latin1") });
      for (const { where, text } of texts) for (const v of values) assert.ok(!text.includes(v), `a secret value appears in ${where}`);
    } catch (err) {
      // The daemon's own account of what happened, for the failure message.
      process.stderr.write(`--- cts log (last 120 lines) ---\n${rt?.lines.slice(-120).join("\n")}\n`);
      throw err;
    } finally {
      await rt?.close();
      if (previousCli === undefined) delete process.env.TF_CLI_CONFIG_FILE;
      else process.env.TF_CLI_CONFIG_FILE = previousCli;
      await tmp.cleanup();
    }
  });

  it("a secret with a lease (KV v1 ttl) is read again before the lease ends: an unchanged value re-runs nothing, a changed one re-runs the task once", async () => {
    const tmp = await tempDir();
    const previousCli = process.env.TF_CLI_CONFIG_FILE;
    process.env.TF_CLI_CONFIG_FILE = tools().cliConfig;
    // Every request to Vault goes through a proxy that counts them: the re-reads are seen, not guessed.
    const proxy = await startCountingProxy(vault.address);
    let rt: TestRuntime | undefined;
    try {
      const pw = secretText("kv2-pw");
      const user1 = secretText("kv1-user");
      const color = secretText("key-color");
      await vault.putV2("app", { pw });
      await vault.api("POST", "kv/db", { password: user1, ttl: "1s" });
      await consul.api("PUT", "/v1/kv/cfg/color", color);
      const file = await hclConfig(tmp.dir, `vault {\n  address = "${proxy.url}"\n  token   = "${vault.rootToken}"\n}`, false);
      rt = await startRuntime(file);
      const out = join(tmp.dir, "app.seen");
      await waitFor(async () => (await seen(out)).length >= 1, 180_000, "the first apply of task app");
      // The module writes the file during the apply; the run's event is recorded once it ends.
      await waitFor(() => runsOf(rt!, "app").some((e) => e.success), 60_000, "the first run's event of task app");
      await rt.controller.idle();
      const runs = runsOf(rt, "app").length;

      // The lease is 1 s: the secret is read again and again; its value is the same, so no run.
      const reads = proxy.total("/v1/kv/db");
      await waitFor(() => proxy.total("/v1/kv/db") >= reads + 3, 120_000, "three re-reads of the leased secret");
      assert.deepEqual(await seen(out), [`${sha(pw)} ${sha(user1)} ${sha(color)}`], "no apply for a re-read with the same value");
      assert.equal(runsOf(rt, "app").length, runs, "no run for a re-read with the same value");

      // A new value: the next re-read finds it and the task runs once with it.
      const user2 = secretText("kv1-user");
      await vault.api("POST", "kv/db", { password: user2, ttl: "1s" });
      const changedAt = proxy.total("/v1/kv/db");
      await waitFor(async () => (await seen(out)).length >= 2, 180_000, "a run with the new value");
      assert.equal((await seen(out))[1], `${sha(pw)} ${sha(user2)} ${sha(color)}`);
      await waitFor(() => proxy.total("/v1/kv/db") >= changedAt + 4, 120_000, "more re-reads after the change");
      assert.equal((await seen(out)).length, 2, "the change re-ran the task once");
      assert.ok(!rt.lines.join("\n").includes(user2), "the value is not logged");
    } catch (err) {
      process.stderr.write(`--- cts log (last 120 lines) ---\n${rt?.lines.slice(-120).join("\n")}\n`);
      throw err;
    } finally {
      await rt?.close();
      await proxy.stop();
      if (previousCli === undefined) delete process.env.TF_CLI_CONFIG_FILE;
      else process.env.TF_CLI_CONFIG_FILE = previousCli;
      await tmp.cleanup();
    }
  });

  it("unwraps a response-wrapped token (unwrap_token) and reads with the token it held", async () => {
    const tmp = await tempDir();
    const previousCli = process.env.TF_CLI_CONFIG_FILE;
    process.env.TF_CLI_CONFIG_FILE = tools().cliConfig;
    let rt: TestRuntime | undefined;
    try {
      const pw = secretText("kv2-pw");
      await vault.putV2("app", { pw });
      await vault.api("POST", "kv/db", { password: "user-for-wrap", ttl: "1h" });
      await consul.api("PUT", "/v1/kv/cfg/color", "blue-for-wrap");
      const wrapped = await vault.api("POST", "auth/token/create", { policies: ["cts"], ttl: "1h" }, { headers: { "x-vault-wrap-ttl": "120s" } });
      const wrapping: string = wrapped.wrap_info.token;
      const file = await hclConfig(tmp.dir, `vault {\n  address      = "${vault.address}"\n  token        = "${wrapping}"\n  unwrap_token = true\n  renew_token  = false\n}`);
      rt = await startRuntime(file);
      const out = join(tmp.dir, "app.seen");
      await waitFor(async () => (await seen(out)).length >= 1, 180_000, "the first apply of task app");
      assert.equal((await seen(out))[0], `${sha(pw)} ${sha("user-for-wrap")} ${sha("blue-for-wrap")}`);
      // The wrapping token was used up by cts's unwrap.
      await assert.rejects(vault.api("POST", "sys/wrapping/lookup", { token: wrapping }), /400/);
      assert.ok(!rt.lines.join("\n").includes(wrapping), "the wrapping token appears in the log");
    } finally {
      await rt?.close();
      if (previousCli === undefined) delete process.env.TF_CLI_CONFIG_FILE;
      else process.env.TF_CLI_CONFIG_FILE = previousCli;
      await tmp.cleanup();
    }
  });

  it("vault_agent_token_file: reads the token Vault Agent's sink holds and follows a new one written into it", async () => {
    const tmp = await tempDir();
    const previousCli = process.env.TF_CLI_CONFIG_FILE;
    process.env.TF_CLI_CONFIG_FILE = tools().cliConfig;
    let rt: TestRuntime | undefined;
    try {
      const pw = secretText("agent-pw");
      await vault.putV2("app", { pw });
      await vault.api("POST", "kv/db", { password: "agent-user-1", ttl: "2s" });
      await consul.api("PUT", "/v1/kv/cfg/color", "agent-color");
      const first = (await vault.api("POST", "auth/token/create", { policies: ["cts"], ttl: "1h" })).auth.client_token as string;
      const sink = join(tmp.dir, "agent-token");
      await writeFile(sink, first + "\n");
      const file = await hclConfig(tmp.dir, `vault {\n  address                = "${vault.address}"\n  vault_agent_token_file = "${sink}"\n}`);
      rt = await startRuntime(file);
      const out = join(tmp.dir, "app.seen");
      await waitFor(async () => (await seen(out)).length >= 1, 180_000, "the first apply of task app");
      // The agent re-authenticated: a new token in the sink, the old one revoked.
      const second = (await vault.api("POST", "auth/token/create", { policies: ["cts"], ttl: "1h" })).auth.client_token as string;
      await writeFile(join(tmp.dir, "agent-token.new"), second + "\n");
      const { rename } = await import("node:fs/promises");
      await rename(join(tmp.dir, "agent-token.new"), sink);
      await vault.api("POST", "auth/token/revoke", { token: first });
      await vault.api("POST", "kv/db", { password: "agent-user-2", ttl: "2s" });
      await waitFor(async () => (await seen(out)).some((l) => l === `${sha(pw)} ${sha("agent-user-2")} ${sha("agent-color")}`), 180_000, "a run with the secret read by the new token");
      const log = rt.lines.join("\n");
      assert.ok(!log.includes(first) && !log.includes(second), "a token appears in the log");
    } finally {
      await rt?.close();
      if (previousCli === undefined) delete process.env.TF_CLI_CONFIG_FILE;
      else process.env.TF_CLI_CONFIG_FILE = previousCli;
      await tmp.cleanup();
    }
  });

  it("talks to Vault over TLS with ca_path (a folder of CA files, keys in it passed over); without the CA the read fails, naming the address", async () => {
    const tlsVault = await startVault({ tls: true });
    const tmp = await tempDir();
    const previousCli = process.env.TF_CLI_CONFIG_FILE;
    process.env.TF_CLI_CONFIG_FILE = tools().cliConfig;
    let rt: TestRuntime | undefined;
    try {
      const pw = secretText("tls-pw");
      await tlsVault.putV2("app", { pw });
      await tlsVault.api("PUT", "sys/policies/acl/cts", { policy: 'path "secret/data/app" { capabilities = ["read"] }\npath "kv/db" { capabilities = ["read"] }\n' });
      await tlsVault.api("POST", "kv/db", { password: "tls-user", ttl: "1h" });
      await consul.api("PUT", "/v1/kv/cfg/color", "tls-color");
      const token = (await tlsVault.api("POST", "auth/token/create", { policies: ["cts"], ttl: "1h" })).auth.client_token as string;
      const file = await hclConfig(tmp.dir, `vault {
  address = "${tlsVault.address}"
  token   = "${token}"
  tls {
    ca_path = "${tlsVault.tlsDir}"
  }
}`);
      rt = await startRuntime(file);
      const out = join(tmp.dir, "app.seen");
      await waitFor(async () => (await seen(out)).length >= 1, 180_000, "the first apply of task app");
      assert.equal((await seen(out))[0], `${sha(pw)} ${sha("tls-user")} ${sha("tls-color")}`);
      const { createVaultClient } = await import("../../src/vault/client.ts");
      const untrusting = createVaultClient({ address: tlsVault.address, token });
      await assert.rejects(untrusting.read("secret/data/app"), (e: any) => e.code === "VAULT_UNREACHABLE" && e.message.includes(tlsVault.address));
      untrusting.close();
    } finally {
      await rt?.close();
      if (previousCli === undefined) delete process.env.TF_CLI_CONFIG_FILE;
      else process.env.TF_CLI_CONFIG_FILE = previousCli;
      await tmp.cleanup();
      await tlsVault.stop();
    }
  });

  it("cts start -once (the CLI, a process of its own) renders the templates with VAULT_TOKEN from its environment, and prints no value", async () => {
    const tmp = await tempDir();
    try {
      const pw = secretText("cli-pw");
      await vault.putV2("app", { pw });
      await vault.api("POST", "kv/db", { password: "cli-user", ttl: "1h" });
      await consul.api("PUT", "/v1/kv/cfg/color", "cli-color");
      const token = (await vault.api("POST", "auth/token/create", { policies: ["cts"], ttl: "1h" })).auth.client_token as string;
      const file = await hclConfig(tmp.dir, `vault {\n  address = "${vault.address}"\n}`, false);
      const env = { ...process.env, TF_CLI_CONFIG_FILE: tools().cliConfig, CHECKPOINT_DISABLE: "1", VAULT_TOKEN: token };
      const once = await execa(process.execPath, [CTS_BIN, "start", "-config-file", file, "-once"], { cwd: tmp.dir, env, reject: false, timeout: 300_000 });
      assert.equal(once.exitCode, 0, `cts start -once:\n${once.stdout}\n${once.stderr}`);
      assert.deepEqual(await seen(join(tmp.dir, "app.seen")), [`${sha(pw)} ${sha("cli-user")} ${sha("cli-color")}`]);
      for (const v of [pw, "cli-user", token]) assert.ok(!`${once.stdout}\n${once.stderr}`.includes(v), "a value appears in the output");
    } finally {
      await tmp.cleanup();
    }
  });

  it("TypeScript config: vaultSecret() in a task's secrets reads KV v2 and a rotated value re-runs the task", async () => {
    const tmp = await tempDir();
    let rt: TestRuntime | undefined;
    try {
      const pw1 = secretText("ts-pw");
      await vault.putV2("ts", { api_key: pw1 });
      await vault.api("PUT", "sys/policies/acl/ts", { policy: 'path "secret/data/ts" { capabilities = ["read"] }\n' });
      const token = (await vault.api("POST", "auth/token/create", { policies: ["ts"], ttl: "1h" })).auth.client_token as string;
      const out = join(tmp.dir, "members.txt");
      const file = await writeConfig(tmp.dir, {
        consulAddress: consul.address,
        extra: `vault: { address: ${JSON.stringify(vault.address)}, token: ${JSON.stringify(token)}, defaultLeaseDuration: "2s" },
  bufferPeriod: false,`,
        tasks: [`new SecretUser("ts-secret", ${JSON.stringify(out)}, vaultSecret("secret/data/ts", "api_key"))`],
      });
      rt = await startRuntime(file);
      await waitFor(() => runsOf(rt!, "ts-secret").some((e) => e.success), 180_000, "the first apply");
      const before = runsOf(rt, "ts-secret").filter((e) => e.success).length;
      await vault.putV2("ts", { api_key: secretText("ts-pw") });
      await waitFor(() => runsOf(rt!, "ts-secret").filter((e) => e.success).length > before, 180_000, "a run after the rotation");
      assert.ok(!rt.lines.join("\n").includes(pw1));
    } finally {
      await rt?.close();
      await tmp.cleanup();
    }
  });
});
