import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { startConsul, type ConsulAgent } from "../support/consul.ts";
import { startRuntime, tempDir, waitFor, writeConfig } from "../support/cts.ts";
import { APPLIED_FILE, STATE_FOLDER } from "../../src/state/file-state.ts";

const CTS = fileURLToPath(new URL("../../bin/cts.js", import.meta.url));
const POLICY = fileURLToPath(new URL("../../examples/acl/cts-policy.hcl", import.meta.url));
const run = promisify(execFile);
const read = (p: string) => readFile(p, "utf8").catch(() => "");

/** The config's consul block with a token (a later `consul:` key wins in the object literal). */
const withToken = (address: string, token: string) => `consul: { address: ${JSON.stringify(address)}, token: ${JSON.stringify(token)} },`;

describe("reads that never empty a pool: Consul with ACLs on (default deny)", () => {
  const management = randomUUID();
  let consul: ConsulAgent;
  let tmp: { dir: string; cleanup(): Promise<void> };
  let ctsRules: string;
  let n = 0;
  const dirFor = async (name: string) => {
    const dir = join(tmp.dir, `${name}-${n++}`);
    await mkdir(dir);
    return dir;
  };
  /** A token with its own policy (so the test can take permissions away from it alone). */
  const tokenWith = async (rules: string): Promise<{ secret: string; policy: string; name: string }> => {
    const policy = `p-${randomUUID()}`;
    const p = await consul.api("PUT", "/v1/acl/policy", { Name: policy, Rules: rules });
    const t = await consul.api("PUT", "/v1/acl/token", { Description: policy, Policies: [{ ID: p.ID }] });
    return { secret: t.SecretID, policy: p.ID, name: policy };
  };

  before(async () => {
    consul = await startConsul({
      extraConfig: `acl {\n  enabled = true\n  default_policy = "deny"\n  tokens {\n    initial_management = "${management}"\n  }\n}\n`,
      headers: { "X-Consul-Token": management },
    });
    tmp = await tempDir();
    ctsRules = await readFile(POLICY, "utf8");
    await consul.register({ Name: "web", ID: "web-1", Address: "10.0.0.1", Port: 80 });
    await consul.register({ Name: "db", ID: "db-1", Address: "10.0.0.5", Port: 5432 });
  });
  after(async () => {
    await consul?.stop();
    await tmp?.cleanup();
  });

  it("without a token, a watched task fails with the ACL error and the fix, and applies nothing", async () => {
    const dir = await dirFor("anon");
    const members = join(dir, "m.txt");
    const file = await writeConfig(dir, { consulAddress: consul.address, tasks: [`new MemberList("anon", ${JSON.stringify(members)})`] });
    const rt = await startRuntime(file);
    try {
      await waitFor(() => rt.controller.events.list("anon").length > 0, 60_000, "the failed run's event");
      const ev = rt.controller.events.list("anon")[0]!;
      assert.equal(ev.success, false);
      assert.match(ev.error!.message, /enforces ACLs and cts sends no token/);
      assert.match(ev.error!.message, /consul\.token/);
      assert.match(ev.error!.message, /service:read on "web"/);
      assert.equal(await read(members), "", "nothing applied from an empty answer Consul's ACLs may have emptied");
    } finally {
      await rt.close();
    }
  });

  it("without a token, `cts synth` exits non-zero and `cts once` fails, both with the fix", async () => {
    const dir = await dirFor("anon-cli");
    const members = join(dir, "m.txt");
    const file = await writeConfig(dir, { consulAddress: consul.address, tasks: [`new MemberList("anon", ${JSON.stringify(members)})`] });
    const env: NodeJS.ProcessEnv = { ...process.env };
    delete env.CONSUL_HTTP_TOKEN;
    const synth = await run("node", [CTS, "synth", "--config", file, "--json"], { env }).then(
      () => ({ code: 0, stderr: "" }),
      (err: { code: number; stderr: string; stdout: string }) => ({ code: err.code, stderr: err.stderr + err.stdout }),
    );
    assert.notEqual(synth.code, 0, "synth must not succeed on an answer the ACLs may have emptied");
    assert.match(synth.stderr, /enforces ACLs and cts sends no token/);
    const rt = await startRuntime(file, { mode: "once" });
    try {
      const [outcome] = await rt.controller.once();
      assert.equal(outcome!.ok, false);
      assert.match(outcome!.error!.message, /consul\.token/);
      const [plan] = await rt.controller.inspect(["anon"]);
      assert.equal(plan!.ok, false);
      assert.equal(await read(members), "");
    } finally {
      await rt.close();
    }
  });

  it("a token that loses service:read while running: the next change is refused with the fix, the pool keeps its instances", async () => {
    const dir = await dirFor("loses");
    const members = join(dir, "m.txt");
    const token = await tokenWith(ctsRules);
    const file = await writeConfig(dir, { consulAddress: consul.address, extra: withToken(consul.address, token.secret), tasks: [`new MemberList("loses", ${JSON.stringify(members)})`] });
    // Consul either keeps a read blocked when the token lost the right to see the change (and answers
    // it at the old index when the wait ends: a short wait gets there sooner), or answers it from its
    // streaming backend at once without the instances; neither says it filtered.
    const rt = await startRuntime(file, { watchTiming: { waitMs: 2_000 } });
    try {
      await waitFor(async () => (await read(members)).includes("web-1"), 60_000, "the first apply");
      // The token's policy loses service:read (KV and sessions stay).
      await consul.api("PUT", `/v1/acl/policy/${token.policy}`, { Name: token.name, Rules: `key_prefix "consul-terraform-sync/" { policy = "write" }\nsession_prefix "" { policy = "write" }` });
      // A change the token may no longer see.
      await consul.register({ Name: "web", ID: "web-2", Address: "10.0.0.2", Port: 80 });
      await waitFor(() => rt.controller.events.list("loses").some((e) => !e.success), 60_000, "the permission error event").catch((err) => {
        throw new Error(`${err}\n${JSON.stringify(rt.controller.events.list("loses"))}\n${rt.lines.filter((l) => !l.includes("[loses]")).join("\n")}`);
      });
      const failed = rt.controller.events.list("loses").find((e) => !e.success)!;
      assert.match(failed.error!.message, /filtered instances of service "web" by ACLs/);
      assert.match(failed.error!.message, /Grant service:read on "web"/);
      const content = await read(members);
      assert.match(content, /web-1/, "the pool was not emptied");
      assert.doesNotMatch(content, /web-2/);
      assert.equal(rt.controller.events.list("loses").filter((e) => e.success).length, 1, "no apply after the permission was lost");
    } finally {
      await rt.close();
    }
  });

  it("a catalog the ACLs shortened is refused, not applied as if services were gone", async () => {
    const dir = await dirFor("catalog");
    const token = await tokenWith(`service "web" { policy = "read" }\nnode_prefix "" { policy = "read" }\nkey_prefix "consul-terraform-sync/" { policy = "write" }\nsession_prefix "" { policy = "write" }`);
    const file = await writeConfig(dir, { consulAddress: consul.address, extra: withToken(consul.address, token.secret), tasks: [`new CatalogJson("catalog", ${JSON.stringify(dir)})`] });
    const rt = await startRuntime(file, { mode: "once" });
    try {
      const [outcome] = await rt.controller.once();
      assert.equal(outcome!.ok, false);
      assert.match(outcome!.error!.message, /filtered the catalog's services by ACLs/);
      assert.equal(await read(join(dir, "task.json")), "", "nothing applied");
    } finally {
      await rt.close();
    }
  });

  it("allowEmpty: false refuses a drop from N instances to none; the default applies it and logs one line", async () => {
    const dir = await dirFor("empty");
    const strict = join(dir, "strict.txt");
    const lenient = join(dir, "lenient.txt");
    await consul.register({ Name: "pool", ID: "pool-1", Address: "10.0.1.1", Port: 80 });
    const file = await writeConfig(dir, {
      consulAddress: consul.address,
      extra: withToken(consul.address, management),
      tasks: [`Object.assign(new MemberList("strict", ${JSON.stringify(strict)}, "pool"), { allowEmpty: false })`, `new MemberList("lenient", ${JSON.stringify(lenient)}, "pool")`],
    });
    const rt = await startRuntime(file);
    try {
      await waitFor(async () => (await read(strict)).includes("pool-1") && (await read(lenient)).includes("pool-1"), 60_000, "the first applies");
      // With ACLs on, the agent cannot sync a deregistration without an agent token: remove it from the catalog too.
      await consul.deregister("pool-1");
      await consul.api("PUT", "/v1/catalog/deregister", { Node: "cts-test", ServiceID: "pool-1" });
      await waitFor(() => rt.controller.events.list("strict").some((e) => !e.success), 60_000, "the refused run").catch((err) => {
        throw new Error(`${err}\n${JSON.stringify(rt.controller.events.list("strict"))}\n${rt.lines.join("\n")}`);
      });
      const refused = rt.controller.events.list("strict").find((e) => !e.success)!;
      assert.match(refused.error!.message, /dropped from 1 instances to none/);
      assert.match(refused.error!.message, /allowEmpty: true/);
      assert.match(await read(strict), /pool-1/, "the strict task's pool was kept");
      await waitFor(() => rt.controller.events.list("lenient").filter((e) => e.success).length >= 2, 60_000, "the lenient task's empty apply");
      assert.equal(await read(lenient), "");
      assert.equal(rt.lines.filter((l) => l.includes("task 'lenient'") && l.includes("dropped from 1 instances to none")).length, 1, "one line for the drop");
    } finally {
      await rt.close();
    }
  });

  it("allowEmpty: false still refuses the drop after a restart: the count is kept in the task's working dir", async () => {
    const dir = await dirFor("empty-restart");
    const strict = join(dir, "strict.txt");
    await consul.register({ Name: "pool2", ID: "pool2-1", Address: "10.0.2.1", Port: 80 });
    await consul.register({ Name: "pool2", ID: "pool2-2", Address: "10.0.2.2", Port: 80 });
    const file = await writeConfig(dir, {
      consulAddress: consul.address,
      extra: withToken(consul.address, management),
      tasks: [`Object.assign(new MemberList("strict", ${JSON.stringify(strict)}, "pool2"), { allowEmpty: false })`],
    });
    const first = await startRuntime(file);
    const countFile = join(dir, "sync-tasks", STATE_FOLDER, "strict", APPLIED_FILE);
    try {
      // Stopped as soon as the count is kept, before the first apply in this new working dir has
      // ended (Terraform gets SIGINT): the count it was applying must be kept all the same.
      await waitFor(async () => (await read(countFile)) !== "", 60_000, "the count of the first apply");
    } finally {
      await first.close();
    }
    assert.equal(JSON.parse(await read(countFile)).count, 2, "the count it was applying (with the key when the apply finished first)");
    const kept = await read(strict);
    // Stopped; meanwhile the pool empties.
    for (const id of ["pool2-1", "pool2-2"]) {
      await consul.deregister(id);
      await consul.api("PUT", "/v1/catalog/deregister", { Node: "cts-test", ServiceID: id });
    }
    const second = await startRuntime(file);
    try {
      await waitFor(() => second.controller.events.list("strict").length > 0, 60_000, "the first run after the restart").catch((err) => {
        throw new Error(`${err}\n${second.lines.join("\n")}`);
      });
      const ev = second.controller.events.list("strict")[0]!;
      assert.equal(ev.success, false, `the first run after the restart was applied:\n${JSON.stringify(second.controller.events.list("strict"))}\n--- before the restart:\n${first.lines.join("\n")}\n--- after:\n${second.lines.join("\n")}`);
      assert.match(ev.error!.message, /dropped from 2 instances to none/);
      assert.equal(await read(strict), kept, "nothing was applied after the restart");
    } finally {
      await second.close();
    }
  });
});

