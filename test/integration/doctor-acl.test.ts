// `cts doctor` against a real Consul with ACLs (default deny): each missing permission is its own
// failed check naming the rule to grant, and the least-privilege policy passes them all.
import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { loadConfig } from "../../src/config/load.ts";
import { runDoctor } from "../../src/doctor/doctor.ts";
import type { CheckResult } from "../../src/doctor/check.ts";
import { startConsul, type ConsulAgent } from "../support/consul.ts";
import { freePort } from "../support/ports.ts";
import { tempDir, writeConfig } from "../support/cts.ts";

const POLICY = fileURLToPath(new URL("../../examples/acl/cts-policy.hcl", import.meta.url));

describe("cts doctor with Consul ACLs", () => {
  const management = randomUUID();
  let consul: ConsulAgent;
  let tmp: { dir: string; cleanup(): Promise<void> };
  const tokens: Record<string, string> = {};

  before(async () => {
    consul = await startConsul({
      extraConfig: `acl {\n  enabled = true\n  default_policy = "deny"\n  tokens {\n    initial_management = "${management}"\n  }\n}\n`,
      headers: { "X-Consul-Token": management },
    });
    tmp = await tempDir("cts-doctor-acl-");
    const policies: Record<string, string> = {
      full: await readFile(POLICY, "utf8"),
      "read-only": `service_prefix "" { policy = "read" }\nnode_prefix "" { policy = "read" }\nkey_prefix "" { policy = "read" }`,
      "kv-only": `key_prefix "consul-terraform-sync/" { policy = "write" }\nsession_prefix "" { policy = "write" }`,
    };
    for (const [name, rules] of Object.entries(policies)) {
      await consul.api("PUT", "/v1/acl/policy", { Name: name, Rules: rules });
      tokens[name] = (await consul.api("PUT", "/v1/acl/token", { Description: name, Policies: [{ Name: name }] })).SecretID;
    }
    await consul.register({ Name: "web", ID: "web-1", Address: "10.0.0.1", Port: 80 });
  });
  after(async () => {
    await consul?.stop();
    await tmp?.cleanup();
  });

  async function doctor(token: string): Promise<Map<string, CheckResult>> {
    const dir = join(tmp.dir, randomUUID());
    const { mkdir } = await import("node:fs/promises");
    await mkdir(dir);
    const file = await writeConfig(dir, {
      consulAddress: consul.address,
      extra: `consul: { address: ${JSON.stringify(consul.address)}, token: ${JSON.stringify(token)} },\n  api: { port: ${await freePort()} },`,
      tasks: [`new MemberList("members", ${JSON.stringify(join(dir, "m.txt"))})`],
    });
    const results = await runDoctor(await loadConfig(file));
    return new Map(results.map((r) => [r.name, r]));
  }

  it("passes every check with the documented least-privilege policy", async () => {
    const r = await doctor(tokens.full!);
    const failed = [...r.values()].filter((c) => !c.ok);
    assert.deepEqual(failed, []);
    assert.deepEqual([...r.keys()], ["consul", "reads:members", "state", "session", "working-dir", "task-dir:members", "terraform", "providers", "working-dirs", "api-port"]);
  });

  it("names key_prefix write and session write for a read-only token", async () => {
    const r = await doctor(tokens["read-only"]!);
    assert.ok(r.get("reads:members")!.ok, r.get("reads:members")!.detail);
    assert.equal(r.get("state")!.ok, false);
    assert.match(r.get("state")!.fix!, /key_prefix "consul-terraform-sync\/terraform" \{ policy = "write" \}/);
    assert.equal(r.get("session")!.ok, false);
    assert.match(r.get("session")!.fix!, /session_prefix "" \{ policy = "write" \}/);
  });

  it("names service and node read for a token that may not read the task's service", async () => {
    const r = await doctor(tokens["kv-only"]!);
    const reads = r.get("reads:members")!;
    assert.equal(reads.ok, false);
    assert.match(reads.detail, /cannot read services 'web'/);
    assert.match(reads.fix!, /service_prefix "" \{ policy = "read" \} and node_prefix/);
    assert.ok(r.get("state")!.ok && r.get("session")!.ok);
  });

  it("reports a token Consul does not know", async () => {
    const r = await doctor(randomUUID());
    assert.equal(r.get("consul")!.ok, false);
    assert.match(r.get("consul")!.fix!, /valid ACL token/);
  });
});
