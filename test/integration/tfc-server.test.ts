import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { TfcClient } from "../../src/tfc/client.ts";
import { awaitsPerson } from "../../src/tfc/runs.ts";
import type { Workspace } from "../../src/tfc/types.ts";
import { rootModule } from "../support/tfc-server/fixtures.ts";
import { startTfcServer, type TfcTestServer } from "../support/tfc-server/index.ts";
import { tools } from "../support/tools.ts";

const FOLLOW = { intervalMs: 50, limitMs: 120_000 };
/** A string value Terraform must never evaluate: it reaches the file as written. */
const V1 = 'v1 "quoted" ${not_evaluated} %{ if true }x%{ endif } \\ end';
const FIRST = `${V1}|{"a":"1"}|from-env|12`;

describe("the TFE-API test server, driven by the TFC client (real OpenTofu behind it)", () => {
  let server: TfcTestServer;
  let client: TfcClient;
  let out: string;
  let module: string;
  let ws: Workspace;

  /** Uploads `dir` to the workspace and creates a run on it. */
  async function run(workspace: Workspace, dir: string, opts: { autoApply?: boolean; planOnly?: boolean; isDestroy?: boolean; speculative?: boolean } = {}) {
    const cv = await client.configurationVersions.uploadDirectory(workspace.id, dir, { intervalMs: 20, speculative: opts.speculative === true });
    const { speculative: _s, ...runOpts } = opts;
    return client.runs.create({ workspaceId: workspace.id, configurationVersionId: cv.id, message: "test", ...runOpts });
  }

  before(async () => {
    server = await startTfcServer({ agentPools: [{ organization: "cts-test", name: "pool-a" }] });
    client = new TfcClient({ hostname: server.url, token: server.token, retry: { baseDelayMs: 1, maxDelayMs: 5 } });
    out = await mkdtemp(join(tmpdir(), "cts-tfc-out-"));
    module = await rootModule("file");
  });
  after(async () => {
    client?.close();
    await server?.stop();
    for (const d of [out, module]) if (d) await rm(d, { recursive: true, force: true });
  });

  it("answers ping with its API version and shows the organization", async () => {
    assert.equal((await client.ping()).apiVersion, "2.6");
    assert.equal((await client.organization(server.organization)).name, server.organization);
  });

  it("creates a workspace with CTS's settings and tags, finds it again, and lists it by tag", async () => {
    const settings = { name: "cts-web", description: "task web", autoApply: true, executionMode: "remote" as const, terraformVersion: "1.9.0", tags: ["source:cts", "team-a"] };
    const first = await client.workspaces.ensure(server.organization, settings);
    assert.equal(first.created, true);
    ws = first.workspace;
    assert.deepEqual([ws.name, ws.description, ws.autoApply, ws.executionMode, ws.terraformVersion, ws.vcsConnected], ["cts-web", "task web", true, "remote", "1.9.0", false]);
    assert.deepEqual(ws.tags, ["source:cts", "team-a"]);

    const second = await client.workspaces.ensure(server.organization, settings);
    assert.deepEqual([second.created, second.workspace.id], [false, ws.id]);
    await client.workspaces.addTags(ws.id, ["extra"]);
    assert.deepEqual((await client.workspaces.readById(ws.id)).tags, ["source:cts", "team-a", "extra"], "tags are added, none removed");

    await client.workspaces.create(server.organization, { name: "untagged" });
    const tagged = await client.workspaces.list(server.organization, { tags: ["source:cts", "team-a"] });
    assert.equal((await client.workspaces.list(server.organization)).length, 2);
    assert.deepEqual(tagged.map((w) => w.name), ["cts-web"]);
    assert.equal(await client.workspaces.read(server.organization, "no-such-workspace"), undefined);
  });

  it("changes settings: agent mode with a pool found by name, back to remote; sees a VCS-connected workspace", async () => {
    const other = await client.workspaces.create(server.organization, { name: "settings" });
    const pool = (await client.agentPools(server.organization)).find((p) => p.name === "pool-a")!;
    const agent = await client.workspaces.update(other.id, { executionMode: "agent", agentPoolId: pool.id, autoApply: true, terraformVersion: "1.8.0" });
    assert.deepEqual([agent.executionMode, agent.agentPoolId, agent.autoApply, agent.terraformVersion], ["agent", pool.id, true, "1.8.0"]);
    const remote = await client.workspaces.update(other.id, { executionMode: "remote" });
    assert.deepEqual([remote.executionMode, remote.agentPoolId], ["remote", undefined]);
    server.store.addWorkspace(server.organization, "from-vcs", { vcsRepo: { identifier: "acme/infra" } });
    assert.equal((await client.workspaces.read(server.organization, "from-vcs"))!.vcsConnected, true);
  });

  it("force-unlocks a workspace another user locked (unlock alone is refused), and deletes a variable", async () => {
    const other = await client.workspaces.create(server.organization, { name: "locked-by-other" });
    server.store.workspaces.get(other.id)!.lockedBy = { type: "users", id: "user-someone-else" };
    await assert.rejects(client.workspaces.unlock(other.id), { code: "TFC_CONFLICT" });
    assert.equal((await client.workspaces.forceUnlock(other.id)).locked, false);
    await assert.rejects(client.workspaces.forceUnlock(other.id), { code: "TFC_CONFLICT" });
    const v = await client.variables.create(other.id, { key: "gone", value: "x", category: "env" });
    await client.variables.delete(other.id, v.id);
    assert.deepEqual(await client.variables.list(other.id), []);
  });

  it("stores variables: HCL and strings, env, and sensitive values that never read back", async () => {
    await client.variables.set(ws.id, { key: "filename", value: join(out, "web.txt"), category: "terraform" });
    await client.variables.set(ws.id, { key: "content", value: "v0", category: "terraform" });
    await client.variables.set(ws.id, { key: "extra", value: '{ a = "1" }', category: "terraform", hcl: true });
    await client.variables.set(ws.id, { key: "TF_VAR_greeting", value: "from-env", category: "env" });
    await client.variables.set(ws.id, { key: "secret", value: "s3cr3t-value", category: "terraform", sensitive: true });
    const vars = await client.variables.list(ws.id);
    assert.equal(vars.length, 5);
    const secret = vars.find((v) => v.key === "secret")!;
    assert.deepEqual([secret.sensitive, secret.value], [true, ""], "a sensitive value reads back empty");
    assert.equal(vars.find((v) => v.key === "extra")!.hcl, true);

    const updated = await client.variables.set(ws.id, { key: "content", value: V1, category: "terraform" });
    assert.equal(updated.value, V1);
    assert.equal((await client.variables.list(ws.id)).length, 5, "set updates the variable with the same key and category");
  });

  it("uploads a configuration and runs it to applied: tofu really wrote the file, the state is kept", async () => {
    const created = await run(ws, module);
    assert.equal(created.status, "pending");
    const done = await client.runs.follow(created.id, FOLLOW);
    assert.equal(done.status, "applied", await client.plans.log(done.included.plan?.logReadUrl ?? ""));
    assert.equal(await readFile(join(out, "web.txt"), "utf8"), FIRST, "string values are written literally, never evaluated");
    assert.deepEqual(await client.plans.outcome(done.planId!), { changesPresent: true, summary: { add: 1, change: 0, destroy: 0 } });
    const apply = await client.plans.readApply(done.applyId!);
    assert.deepEqual([apply.status, apply.additions], ["finished", 1]);
    assert.match(await client.plans.log(apply.logReadUrl!), /Apply complete! Resources: 1 added/);

    const outputs = await client.stateOutputs(ws.id);
    assert.deepEqual(outputs.find((o) => o.name === "content")?.value, FIRST);
    assert.deepEqual(outputs.find((o) => o.name === "secret"), { name: "secret", sensitive: true, value: null });
    assert.equal(server.store.workspaces.get(ws.id)!.stateVersions.length, 1);
  });

  it("ends a second run of the same configuration planned_and_finished, even with auto-apply", async () => {
    const done = await client.runs.follow((await run(ws, module)).id, FOLLOW);
    assert.equal(done.status, "planned_and_finished");
    assert.equal(done.hasChanges, false);
    assert.deepEqual(await client.plans.outcome(done.planId!), { changesPresent: false, summary: { add: 0, change: 0, destroy: 0 } });
  });

  it("plans a speculative plan-only run with run variables: plan JSON shows the change, nothing is applied", async () => {
    const cv = await client.configurationVersions.uploadDirectory(ws.id, module, { intervalMs: 20, speculative: true });
    const created = await client.runs.create({ workspaceId: ws.id, configurationVersionId: cv.id, planOnly: true, variables: [{ key: "content", value: '"v2"' }] });
    const done = await client.runs.follow(created.id, FOLLOW);
    assert.equal(done.status, "planned_and_finished");
    assert.equal(done.planOnly, true);
    const json = (await client.plans.json(done.planId!)) as { resource_changes: { change: { actions: string[]; after: { content: string } } }[] };
    assert.deepEqual(json.resource_changes[0]!.change.actions, ["delete", "create"]);
    assert.match(json.resource_changes[0]!.change.after.content, /^v2\|/);
    assert.deepEqual(await client.plans.outcome(done.planId!), { changesPresent: true, summary: { add: 1, change: 0, destroy: 1 } });
    assert.equal(await readFile(join(out, "web.txt"), "utf8"), FIRST, "a plan-only run applies nothing");
    const listed = await client.runs.read(done.id);
    assert.equal(listed.planOnly, true);
  });

  it("ends a run whose plan fails errored, with tofu's error in the plan log", async () => {
    const broken = await rootModule("broken");
    try {
      const done = await client.runs.follow((await run(ws, broken)).id, FOLLOW);
      assert.equal(done.status, "errored");
      const plan = await client.plans.read(done.planId!);
      assert.equal(plan.status, "errored");
      assert.match(await client.plans.log(plan.logReadUrl!), /Reference to undeclared input variable/);
    } finally {
      await rm(broken, { recursive: true, force: true });
    }
  });

  it("waits for confirmation without auto-apply, then applies on the apply action", async () => {
    await client.variables.set(ws.id, { key: "content", value: "v3", category: "terraform" });
    const waiting = await client.runs.follow((await run(ws, module, { autoApply: false })).id, FOLLOW);
    assert.equal(waiting.status, "planned");
    assert.ok(awaitsPerson(waiting) && waiting.actions.isConfirmable && waiting.actions.isDiscardable);
    assert.equal(await readFile(join(out, "web.txt"), "utf8"), FIRST, "nothing applied before confirmation");
    await client.runs.apply(waiting.id);
    assert.equal((await client.runs.follow(waiting.id, FOLLOW)).status, "applied");
    assert.match(await readFile(join(out, "web.txt"), "utf8"), /^v3\|/);
    await assert.rejects(client.runs.apply(waiting.id), { code: "TFC_CONFLICT" }, "an applied run cannot be confirmed again");
  });

  it("discards a run waiting for confirmation; the next run then plans", async () => {
    await client.variables.set(ws.id, { key: "content", value: "v4", category: "terraform" });
    const waiting = await client.runs.follow((await run(ws, module, { autoApply: false })).id, FOLLOW);
    assert.equal(waiting.status, "planned");
    await client.runs.discard(waiting.id);
    assert.equal((await client.runs.read(waiting.id)).status, "discarded");
    assert.match(await readFile(join(out, "web.txt"), "utf8"), /^v3\|/);
    await assert.rejects(client.runs.discard(waiting.id), { code: "TFC_CONFLICT" });
    assert.equal((await client.runs.follow((await run(ws, module)).id, FOLLOW)).status, "applied");
    assert.match(await readFile(join(out, "web.txt"), "utf8"), /^v4\|/);
  });

  it("refuses a second lock and an unlock of an unlocked workspace (409), and holds runs while locked", async () => {
    const locked = await client.workspaces.lock(ws.id, "maintenance");
    assert.equal(locked.locked, true);
    assert.equal(locked.lockedBy?.type, "users");
    await assert.rejects(client.workspaces.lock(ws.id, "again"), (err: any) => err.code === "TFC_CONFLICT" && /409/.test(err.message));
    await client.variables.set(ws.id, { key: "content", value: "v5", category: "terraform" });
    const held = await run(ws, module);
    assert.equal((await client.runs.read(held.id)).status, "pending", "a run on a locked workspace waits");
    await client.workspaces.unlock(ws.id);
    await assert.rejects(client.workspaces.unlock(ws.id), { code: "TFC_CONFLICT" });
    assert.equal((await client.runs.follow(held.id, FOLLOW)).status, "applied");
    assert.match(await readFile(join(out, "web.txt"), "utf8"), /^v5\|/);
  });

  it("destroys with an is-destroy run", async () => {
    const done = await client.runs.follow((await run(ws, module, { isDestroy: true })).id, FOLLOW);
    assert.equal(done.status, "applied");
    assert.equal(done.isDestroy, true);
    assert.equal(existsSync(join(out, "web.txt")), false);
    assert.deepEqual(await client.stateOutputs(ws.id), []);
  });

  it("leaves no working directory behind after its runs", async () => {
    assert.deepEqual(await readdir(server.workRoot), []);
  });

  it("installs providers per run, as a worker does: the test process's shared plugin cache is never touched", async () => {
    // A shared cache raced: one run's init re-linked an entry while another run's plan started the provider.
    assert.deepEqual(await readdir(tools().pluginCache), []);
  });

  it("got the token only on API paths: never on uploads, logs or the plan's JSON", () => {
    const archivist = server.requests.filter((r) => r.path.startsWith("/_archivist/"));
    assert.deepEqual([...new Set(archivist.map((r) => `${r.method} ${r.path.split("/")[2]}`))].sort(), ["GET blob", "PUT upload"]);
    assert.ok(archivist.every((r) => !r.authorized), "no Authorization header on archivist URLs");
    assert.ok(archivist.filter((r) => r.method === "PUT").every((r) => r.contentType === "application/octet-stream"));
    assert.ok(server.requests.filter((r) => r.path.startsWith("/api/v2/") && r.path !== "/api/v2/ping").every((r) => r.authorized));
  });
});
