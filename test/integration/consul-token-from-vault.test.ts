// The Consul token from Vault (CTS #825), against a real Consul with ACLs on (default deny) and a
// real OpenBao: cts reads the token from a KV v2 secret before its first call to Consul, applies
// with it, and when the secret is rotated (the old token deleted in Consul) the next change is
// watched and applied with the new token — no restart, no token in any log line.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { loadConfig } from "../../src/config/load.ts";
import { runDoctor } from "../../src/doctor/doctor.ts";
import { startConsul, type ConsulAgent } from "../support/consul.ts";
import { startRuntime, tempDir, waitFor } from "../support/cts.ts";
import { tools } from "../support/tools.ts";
import { startVault, type VaultServer } from "../support/vault.ts";

const POLICY = fileURLToPath(new URL("../../examples/acl/cts-policy.hcl", import.meta.url));
const PUBLIC_API = fileURLToPath(new URL("../../src/index.ts", import.meta.url));
const FIXTURE_TASKS = fileURLToPath(new URL("../fixtures/tasks.ts", import.meta.url));
const read = (p: string) => readFile(p, "utf8").catch(() => "");

describe("the Consul token from a Vault secret (consul.token = vaultSecret(…))", () => {
  const management = randomUUID();
  let consul: ConsulAgent;
  let vault: VaultServer;
  let tmp: { dir: string; cleanup(): Promise<void> };
  const tokens: Record<"first" | "second", { secret: string; accessor: string }> = {} as never;

  before(async () => {
    [consul, vault] = await Promise.all([
      startConsul({
        extraConfig: `acl {\n  enabled = true\n  default_policy = "deny"\n  tokens {\n    initial_management = "${management}"\n  }\n}\n`,
        headers: { "X-Consul-Token": management },
      }),
      startVault(),
    ]);
    tmp = await tempDir("cts-consul-token-vault-");
    await consul.api("PUT", "/v1/acl/policy", { Name: "cts", Rules: await readFile(POLICY, "utf8") });
    for (const which of ["first", "second"] as const) {
      const t = await consul.api("PUT", "/v1/acl/token", { Description: `cts ${which}`, Policies: [{ Name: "cts" }] });
      tokens[which] = { secret: t.SecretID, accessor: t.AccessorID };
    }
    await consul.register({ Name: "web", ID: "web-1", Address: "10.0.0.1", Port: 80 });
  });
  after(async () => {
    await Promise.all([consul?.stop(), vault?.stop()]);
    await tmp?.cleanup();
  });

  /** A config in `dir` whose Consul token is the field `field` of the KV v2 secret `name`. */
  async function configReading(dir: string, name: string, field: string, members: string): Promise<string> {
    await mkdir(dir, { recursive: true });
    const t = tools();
    const file = join(dir, "cts.config.ts");
    await writeFile(
      file,
      `import { defineConfig, vaultSecret } from ${JSON.stringify(PUBLIC_API)};
import { MemberList } from ${JSON.stringify(FIXTURE_TASKS)};
export default defineConfig({
  consul: { address: ${JSON.stringify(consul.address)}, token: vaultSecret(${JSON.stringify(`secret/data/${name}`)}, ${JSON.stringify(field)}) },
  vault: { address: ${JSON.stringify(vault.address)}, token: ${JSON.stringify(vault.rootToken)}, defaultLeaseDuration: "2s" },
  driver: { terraform: { binary: ${JSON.stringify(t.tofu)}, cliConfigFile: ${JSON.stringify(t.cliConfig)}, workingDir: ${JSON.stringify(join(dir, "sync-tasks"))} } },
  api: { port: 0 },
  tasks: [new MemberList("members", ${JSON.stringify(members)})],
});
`,
    );
    return file;
  }

  it("watches and applies with the secret's token, and takes a rotated token without a restart", async () => {
    await vault.putV2("cts-consul", { token: tokens.first.secret });
    const dir = join(tmp.dir, "rotate");
    const members = join(dir, "members.txt");
    const live = await startRuntime(await configReading(dir, "cts-consul", "token", members), { mode: "watch" });
    try {
      await waitFor(async () => (await read(members)).includes("web-1"), 60_000, "the first apply with the token from Vault");
      // Rotation as an operator does it: the new token into Vault, then the old one deleted in Consul.
      await vault.putV2("cts-consul", { token: tokens.second.secret });
      await waitFor(async () => live.lines.some((l) => l.includes("the token in the Vault secret 'secret/data/cts-consul' changed; using the new one")), 30_000, "the new token taken");
      await consul.api("DELETE", `/v1/acl/token/${tokens.first.accessor}`);
      // Watched with the new token (the old one is gone), and Terraform's Consul backend keeps state with it.
      await consul.register({ Name: "web", ID: "web-2", Address: "10.0.0.2", Port: 80 });
      await waitFor(async () => (await read(members)).includes("web-2"), 60_000, "the change after the rotation applied");
      const all = live.lines.join("\n");
      assert.ok(!all.includes(tokens.first.secret) && !all.includes(tokens.second.secret), "no token in any log line");
      const statuses = live.controller.events.list("members").map((e) => e.outcome);
      assert.ok(!statuses.includes("failed"), `no failed run: ${JSON.stringify(live.controller.events.list("members"))}\n${live.lines.slice(-60).join("\n")}`);
    } finally {
      await live.close();
    }
  });

  it("one Vault token session for the Consul token and the task secrets: a response-wrapped token is unwrapped once", async () => {
    await vault.putV2("cts-consul-wrapped", { token: tokens.second.secret });
    await vault.putV2("app-key", { key: "k-9f3e" });
    const wrapped = await vault.api("POST", "auth/token/create", { ttl: "1h" }, { headers: { "x-vault-wrap-ttl": "120s" } });
    const wrapping: string = wrapped.wrap_info.token;
    const dir = join(tmp.dir, "wrapped");
    await mkdir(dir, { recursive: true });
    const t = tools();
    const members = join(dir, "members.txt");
    const file = join(dir, "cts.config.ts");
    await writeFile(
      file,
      `import { defineConfig, vaultSecret } from ${JSON.stringify(PUBLIC_API)};
import { SecretUser } from ${JSON.stringify(FIXTURE_TASKS)};
export default defineConfig({
  consul: { address: ${JSON.stringify(consul.address)}, token: vaultSecret("secret/data/cts-consul-wrapped", "token") },
  vault: { address: ${JSON.stringify(vault.address)}, token: ${JSON.stringify(wrapping)}, unwrapToken: true },
  driver: { terraform: { binary: ${JSON.stringify(t.tofu)}, cliConfigFile: ${JSON.stringify(t.cliConfig)}, workingDir: ${JSON.stringify(join(dir, "sync-tasks"))} } },
  tasks: [new SecretUser("members", ${JSON.stringify(members)}, vaultSecret("secret/data/app-key", "key"))],
});
`,
    );
    const live = await startRuntime(file, { mode: "watch" });
    try {
      // The Consul token was read first (the watch needs it); the task's secret then, on the same session.
      await waitFor(async () => (await read(members)).includes("web-1"), 60_000, "the first apply, with the task's secret");
      // The file is written during the apply; the run's event follows when it ends.
      const event = await waitFor(() => live.controller.events.list("members")[0], 30_000, "the first run's event");
      assert.equal(event!.outcome, "applied", JSON.stringify(event));
      await assert.rejects(vault.api("POST", "sys/wrapping/lookup", { token: wrapping }), /400/, "the wrapping token was used up (once)");
      assert.ok(!live.lines.some((l) => /unwrap/i.test(l) && /fail|invalid/i.test(l)), live.lines.join("\n"));
    } finally {
      await live.close();
    }
  });

  it("cts doctor reads the token first, and names the secret and the fix when the field is missing", async () => {
    await vault.putV2("cts-consul-empty", { other: "x" });
    const dir = join(tmp.dir, "doctor");
    const loaded = await loadConfig(await configReading(dir, "cts-consul-empty", "token", join(dir, "members.txt")));
    const results = await runDoctor(loaded);
    const token = results.find((r) => r.name === "consul-token");
    assert.ok(token && !token.ok, `a failed consul-token check: ${JSON.stringify(results)}`);
    assert.match(token.detail, /consul\.token: the Vault secret 'secret\/data\/cts-consul-empty' has no \.Data\.data\.token/);
    assert.match(token.fix ?? "", /Write the secret|fix the path/);
    const consulCheck = results.find((r) => r.name === "consul");
    assert.match(consulCheck?.detail ?? "", /not checked: the Consul token could not be read from Vault/);
  });

  it("cts doctor passes with a readable secret: the token is read, Consul answers with it", async () => {
    await vault.putV2("cts-consul-ok", { token: tokens.second.secret });
    const dir = join(tmp.dir, "doctor-ok");
    const loaded = await loadConfig(await configReading(dir, "cts-consul-ok", "token", join(dir, "members.txt")));
    const results = await runDoctor(loaded);
    const byName = new Map(results.map((r) => [r.name, r]));
    assert.equal(byName.get("consul-token")?.ok, true, JSON.stringify(results));
    assert.equal(byName.get("consul")?.ok, true, JSON.stringify(byName.get("consul")));
    assert.equal(byName.get("reads:members")?.ok, true, JSON.stringify(byName.get("reads:members")));
    assert.ok(!JSON.stringify(results).includes(tokens.second.secret), "the token is in no check");
  });
});
