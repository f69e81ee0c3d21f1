import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { readFile, readdir, stat } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { startConsul, type ConsulAgent } from "../support/consul.ts";
import { startRuntime, tempDir, waitFor, writeConfig } from "../support/cts.ts";

const POLICY = fileURLToPath(new URL("../../examples/acl/cts-policy.hcl", import.meta.url));
const read = (p: string) => readFile(p, "utf8").catch(() => "");

/** Every file below `dir`, recursively (for secret greps). */
async function allFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    // Live process records come and go while Terraform runs; they hold pids, never tokens.
    if (e.isDirectory() && e.name === ".cts-processes") continue;
    if (e.isDirectory()) out.push(...(await allFiles(p)));
    else if (e.isFile()) out.push(p);
  }
  return out;
}

describe("Consul with ACLs on (default deny) and the least-privilege policy", () => {
  const management = randomUUID();
  let consul: ConsulAgent;
  let tmp: { dir: string; cleanup(): Promise<void> };
  let ctsToken: string;
  let noKvToken: string;

  before(async () => {
    consul = await startConsul({
      extraConfig: `acl {\n  enabled = true\n  default_policy = "deny"\n  tokens {\n    initial_management = "${management}"\n  }\n}\n`,
      headers: { "X-Consul-Token": management },
    });
    tmp = await tempDir();
    const rules = await readFile(POLICY, "utf8");
    await consul.api("PUT", "/v1/acl/policy", { Name: "cts", Rules: rules });
    await consul.api("PUT", "/v1/acl/policy", { Name: "cts-no-kv-write", Rules: rules.replace(/key_prefix "consul-terraform-sync\/" \{\s*policy = "write"\s*\}/, "") });
    ctsToken = (await consul.api("PUT", "/v1/acl/token", { Description: "cts", Policies: [{ Name: "cts" }] })).SecretID;
    noKvToken = (await consul.api("PUT", "/v1/acl/token", { Description: "no kv", Policies: [{ Name: "cts-no-kv-write" }] })).SecretID;
    await consul.register({ Name: "web", ID: "web-1", Address: "10.0.0.1", Port: 80 });
  });
  after(async () => {
    await consul?.stop();
    await tmp?.cleanup();
  });

  it("watches and applies with exactly the documented policy, and never shows the token", async () => {
    const members = join(tmp.dir, "members.txt");
    const dir = join(tmp.dir, "ok");
    await (await import("node:fs/promises")).mkdir(dir);
    const file = await writeConfig(dir, { consulAddress: consul.address, tasks: [`new MemberList("members", ${JSON.stringify(members)})`] });
    // The token comes from the environment, as an operator would pass it.
    process.env.CONSUL_HTTP_TOKEN = ctsToken;
    try {
      const live = await startRuntime(file, { mode: "watch" });
      try {
        await waitFor(async () => (await read(members)).includes("web-1"), 30_000, "the first apply");
        await consul.register({ Name: "web", ID: "web-2", Address: "10.0.0.2", Port: 80 });
        await waitFor(async () => (await read(members)).includes("web-2"), 20_000, "the change applied");
        const state = await consul.api("GET", "/v1/kv/consul-terraform-sync/terraform-env:members");
        assert.equal(state.length, 1, "state stored under the CTS path");
        assert.ok(!live.lines.join("\n").includes(ctsToken), "the token is not in the logs");
        for (const f of await allFiles(join(dir, "sync-tasks"))) {
          const size = await stat(f).then((s) => s.size, () => 0);
          if (size > 5_000_000) continue;
          assert.ok(!(await readFile(f)).includes(ctsToken), `the token is not in ${f}`);
        }
      } finally {
        await live.close();
      }
    } finally {
      delete process.env.CONSUL_HTTP_TOKEN;
    }
  });

  it("a token without KV write gives a clear error naming the missing permission, and the daemon goes on", async () => {
    const dir = join(tmp.dir, "nokv");
    await (await import("node:fs/promises")).mkdir(dir);
    const file = await writeConfig(dir, {
      consulAddress: consul.address,
      extra: `consul: { address: ${JSON.stringify(consul.address)}, token: ${JSON.stringify(noKvToken)} },`,
      tasks: [`new MemberList("members", ${JSON.stringify(join(dir, "m.txt"))})`],
    });
    // writeConfig put a consul block first; the later one (with the token) wins in an object literal.
    const rt = await startRuntime(file);
    try {
      await waitFor(() => rt.controller.events.list("members").length > 0, 30_000, "the failed run's event");
      const ev = rt.controller.events.list("members")[0]!;
      assert.equal(ev.success, false);
      assert.match(ev.error!.message, /Task 'members'/);
      assert.match(ev.error!.message, /key:(write|list|read)|Permission denied/i);
      assert.match(ev.error!.message, /ACL/);
      assert.ok(!ev.error!.message.includes(noKvToken), "the token is not in the error");
      assert.ok(!rt.lines.join("\n").includes(noKvToken), "the token is not in the logs");
    } finally {
      await rt.close();
    }
  });

  it("re-reads a token file when it is rotated, for watching and for Terraform", async () => {
    const dir = join(tmp.dir, "rotate");
    const fs = await import("node:fs/promises");
    await fs.mkdir(dir);
    const tokenFile = join(dir, "token");
    await fs.writeFile(tokenFile, noKvToken + "\n");
    const members = join(dir, "m.txt");
    const file = await writeConfig(dir, {
      consulAddress: consul.address,
      extra: `consul: { address: ${JSON.stringify(consul.address)}, tokenFile: ${JSON.stringify(tokenFile)} },`,
      tasks: [`new MemberList("rotated", ${JSON.stringify(members)})`],
    });
    const rt = await startRuntime(file);
    try {
      await waitFor(() => rt.controller.events.list("rotated").length > 0, 30_000, "the first (denied) run");
      assert.equal(rt.controller.events.list("rotated")[0]!.success, false);
      // Rotate as secret managers do: write a new file and rename it over the old one.
      await fs.writeFile(tokenFile + ".new", ctsToken);
      await fs.rename(tokenFile + ".new", tokenFile);
      await waitFor(() => rt.lines.some((l) => l.includes("token in") && l.includes("changed")), 60_000, "the rotation noticed");
      await consul.register({ Name: "web", ID: "web-9", Address: "10.0.0.9", Port: 80 });
      await waitFor(async () => (await read(members)).includes("web-9"), 30_000, "an apply with the new token");
      assert.ok(!rt.lines.join("\n").includes(ctsToken) && !rt.lines.join("\n").includes(noKvToken), "no token in the logs");
    } finally {
      await rt.close();
    }
  });

  it("a token that may not read a service gets an error naming service:read on it, not an empty pool", async () => {
    const dir = join(tmp.dir, "noread");
    const fs = await import("node:fs/promises");
    await fs.mkdir(dir);
    await consul.api("PUT", "/v1/acl/policy", { Name: "kv-only", Rules: `key_prefix "consul-terraform-sync/" { policy = "write" }\nsession_prefix "" { policy = "write" }` });
    const kvOnly = (await consul.api("PUT", "/v1/acl/token", { Description: "kv only", Policies: [{ Name: "kv-only" }] })).SecretID;
    const members = join(dir, "m.txt");
    const file = await writeConfig(dir, {
      consulAddress: consul.address,
      extra: `consul: { address: ${JSON.stringify(consul.address)}, token: ${JSON.stringify(kvOnly)} },`,
      tasks: [`new MemberList("blind", ${JSON.stringify(members)})`],
    });
    const rt = await startRuntime(file);
    try {
      await waitFor(() => rt.controller.events.list("blind").length > 0, 30_000, "the permission error event");
      const ev = rt.controller.events.list("blind")[0]!;
      assert.equal(ev.success, false);
      assert.match(ev.error!.message, /service:read on "web"/);
      assert.equal(await read(members), "", "nothing applied from a filtered (empty) answer");
    } finally {
      await rt.close();
    }
  });
});
