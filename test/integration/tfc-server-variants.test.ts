import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, readFile, readdir, readlink, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { packDirectory } from "../../src/tfc/archive.ts";
import { TfcClient } from "../../src/tfc/client.ts";
import { awaitsPerson } from "../../src/tfc/runs.ts";
import type { Workspace } from "../../src/tfc/types.ts";
import { rootModule } from "../support/tfc-server/fixtures.ts";
import { startTfcServer, type TfcServerOptions, type TfcTestServer } from "../support/tfc-server/index.ts";
import { waitFor } from "../support/cts.ts";

const FOLLOW = { intervalMs: 50, limitMs: 120_000 };
const FAST = { baseDelayMs: 1, maxDelayMs: 5 };

/** A server, a client for it, an output dir; all gone after the suite. */
function fixture(options: TfcServerOptions) {
  const f = {} as { server: TfcTestServer; client: TfcClient; out: string; modules: string[] };
  before(async () => {
    f.server = await startTfcServer(options);
    f.client = new TfcClient({ hostname: f.server.url, token: f.server.token, retry: FAST });
    f.out = await mkdtemp(join(tmpdir(), "cts-tfc-variant-"));
    f.modules = [];
  });
  after(async () => {
    f.client?.close();
    await f.server?.stop();
    for (const d of [f.out, ...(f.modules ?? [])]) if (d) await rm(d, { recursive: true, force: true });
  });
  return f;
}

/** A JSON:API call without the client (for what the client deliberately never sends). */
async function raw(server: TfcTestServer, method: string, path: string, body?: unknown) {
  const res = await fetch(`${server.url}${path}`, {
    method,
    headers: { Authorization: `Bearer ${server.token}`, "Content-Type": "application/vnd.api+json" },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  return { status: res.status, json: text ? JSON.parse(text) : undefined };
}

async function module(f: { modules: string[] }, kind: Parameters<typeof rootModule>[0], marker?: number): Promise<string> {
  const dir = await rootModule(kind, marker === undefined ? {} : { marker });
  f.modules.push(dir);
  return dir;
}

async function runTo(f: { client: TfcClient }, ws: Workspace, dir: string, extra: { autoApply?: boolean } = {}) {
  const cv = await f.client.configurationVersions.uploadDirectory(ws.id, dir, { intervalMs: 10 });
  const run = await f.client.runs.create({ workspaceId: ws.id, configurationVersionId: cv.id, ...extra });
  return f.client.runs.follow(run.id, FOLLOW);
}

describe("a server with every variation of TFC-API-NOTES.md switched on, driven by the client", () => {
  const f = fixture({
    variants: {
      ignoresAutoQueueRuns: true,
      omitsResourceCounts: "zero",
      omitsHasChanges: true,
      ignoresInclude: true,
      omitsWorkspaceExtras: true,
      duplicateVariableStatus: 500,
      duplicateWorkspaceStatus: 409,
      textPlain401: true,
      emptyBody409: true,
      urlencodedUpload500: true,
      pendingConfigAcceptedThenErrors: true,
      runsOnSameHost: true,
      installableVersions: ["1.9.0"],
      uploadPendingReads: 2,
      costEstimation: true,
      policyChecks: true,
    },
  });
  let ws: Workspace;

  it("creates the workspace (a duplicate is a 409 here; ensure re-reads) without resource-count or locked-by", async () => {
    ws = (await f.client.workspaces.ensure(f.server.organization, { name: "all-variants", autoApply: true, terraformVersion: "1.9.0", tags: ["source:cts"] })).workspace;
    await assert.rejects(f.client.workspaces.create(f.server.organization, { name: "all-variants" }), { code: "TFC_CONFLICT" });
    assert.equal((await f.client.workspaces.ensure(f.server.organization, { name: "all-variants" })).workspace.id, ws.id);
    assert.equal(ws.resourceCount, undefined);
    assert.equal(ws.lockedBy, undefined);
  });

  it("answers a duplicate variable with 500 (not repeated), and set() still converges", async () => {
    await f.client.variables.set(ws.id, { key: "filename", value: join(f.out, "all.txt"), category: "terraform" });
    await f.client.variables.set(ws.id, { key: "content", value: "first", category: "terraform" });
    await assert.rejects(f.client.variables.create(ws.id, { key: "content", value: "x", category: "terraform" }), { code: "TFC_SERVER_ERROR" });
    assert.equal((await f.client.variables.set(ws.id, { key: "content", value: "second", category: "terraform" })).value, "second");
  });

  it("runs to applied through cost estimation and policy checks; changes come from the plan's JSON", async () => {
    const seen = f.server.requests.length;
    const done = await runTo(f, ws, await module(f, "file"));
    assert.equal(done.status, "applied");
    const cvReads = f.server.requests.slice(seen).filter((r) => r.method === "GET" && r.path.startsWith("/api/v2/configuration-versions/"));
    assert.equal(cvReads.length, 3, "the upload read pending twice, then uploaded");
    assert.ok(done.statusTimestamps["cost-estimated-at"] && done.statusTimestamps["policy-checked-at"]);
    assert.deepEqual(done.included, {}, "include=plan,apply was ignored");
    assert.equal(done.hasChanges, undefined);
    const plan = await f.client.plans.read(done.planId!);
    assert.deepEqual([plan.hasChanges, plan.additions], [undefined, 0], "no has-changes, counts always 0");
    assert.deepEqual(await f.client.plans.outcome(done.planId!), { changesPresent: true, summary: { add: 1, change: 0, destroy: 0 } });
    assert.match(await readFile(join(f.out, "all.txt"), "utf8"), /^second\|/);

    const again = await runTo(f, ws, await module(f, "file"));
    assert.equal(again.status, "planned_and_finished");
    assert.deepEqual(await f.client.plans.outcome(again.planId!), { changesPresent: false, summary: { add: 0, change: 0, destroy: 0 } });
  });

  it("never queues a run on upload, whatever auto-queue-runs says", async () => {
    const cv = await raw(f.server, "POST", `/api/v2/workspaces/${ws.id}/configuration-versions`, { data: { type: "configuration-versions", attributes: { "auto-queue-runs": true } } });
    const put = await fetch(cv.json.data.attributes["upload-url"], { method: "PUT", headers: { "Content-Type": "application/octet-stream" }, body: await packDirectory(await module(f, "file")) });
    assert.equal(put.status, 200);
    await f.client.configurationVersions.waitUntilUploaded(cv.json.data.id, { intervalMs: 10 });
    const runs = await raw(f.server, "GET", `/api/v2/workspaces/${ws.id}/runs`);
    assert.equal(runs.json.data.length, 2, "only the two runs the client created");
  });

  it("fails a form-encoded upload with 500; the client's octet-stream upload works", async () => {
    const cv = await f.client.configurationVersions.create(ws.id);
    const put = await fetch(cv.uploadUrl!, { method: "PUT", headers: { "Content-Type": "application/x-www-form-urlencoded" }, body: await packDirectory(await module(f, "file")) });
    assert.equal(put.status, 500);
    await f.client.configurationVersions.upload(cv.uploadUrl!, await packDirectory(await module(f, "file")));
    assert.equal((await f.client.configurationVersions.waitUntilUploaded(cv.id, { intervalMs: 10 })).status, "uploaded");
  });

  it("accepts a run on a pending configuration version, which then errors in plan", async () => {
    const cv = await f.client.configurationVersions.create(ws.id);
    const done = await f.client.runs.follow((await f.client.runs.create({ workspaceId: ws.id, configurationVersionId: cv.id })).id, FOLLOW);
    assert.equal(done.status, "errored");
    assert.match(await f.client.plans.log((await f.client.plans.read(done.planId!)).logReadUrl!), /has not been uploaded/);
  });

  it("errors a run whose workspace asks for a Terraform version the server cannot install", async () => {
    const old = await f.client.workspaces.create(f.server.organization, { name: "old-version", terraformVersion: "1.2.3", autoApply: true });
    const done = await runTo(f, old, await module(f, "file"));
    assert.equal(done.status, "errored");
    assert.match(await f.client.plans.log((await f.client.plans.read(done.planId!)).logReadUrl!), /Terraform 1\.2\.3 could not be installed/);
  });

  it("runs on the server's host with the server's environment", async () => {
    await f.client.variables.set(ws.id, { key: "filename", value: join(f.out, "home.txt"), category: "terraform" });
    assert.equal((await runTo(f, ws, await module(f, "home"))).status, "applied");
    assert.equal(await readFile(join(f.out, "home.txt"), "utf8"), process.env.HOME);
  });

  it("sends a 409 with an empty body for a second lock, and a text/plain 401", async () => {
    await f.client.workspaces.lock(ws.id, "one");
    await assert.rejects(f.client.workspaces.lock(ws.id, "two"), (err: any) => err.code === "TFC_CONFLICT" && /\(no body\)/.test(err.message));
    await f.client.workspaces.unlock(ws.id);
    const bad = new TfcClient({ hostname: f.server.url, token: "not-a-token-at-all-000", retry: FAST });
    try {
      await assert.rejects(bad.organization(f.server.organization), (err: any) => err.code === "TFC_UNAUTHORIZED" && /answered 401 to GET [^:]+: unauthorized\./.test(err.message));
      const res = await fetch(`${f.server.url}/api/v2/organizations/${f.server.organization}`, { headers: { Authorization: "Bearer nope" } });
      assert.match(res.headers.get("content-type") ?? "", /^text\/plain/);
    } finally {
      bad.close();
    }
  });
});

describe("the default server (HCP Terraform's documented behaviour) where the variants differ", () => {
  const f = fixture({});

  it("queues a run when a configuration version is uploaded with auto-queue-runs", async () => {
    const ws = await f.client.workspaces.create(f.server.organization, { name: "auto-queue" });
    const cv = await raw(f.server, "POST", `/api/v2/workspaces/${ws.id}/configuration-versions`, { data: { type: "configuration-versions", attributes: {} } });
    await fetch(cv.json.data.attributes["upload-url"], { method: "PUT", headers: { "Content-Type": "application/octet-stream" }, body: await packDirectory(await module(f, "broken")) });
    const runs = await raw(f.server, "GET", `/api/v2/workspaces/${ws.id}/runs`);
    assert.equal(runs.json.data.length, 1);
    assert.equal((await f.client.runs.follow(runs.json.data[0].id, FOLLOW)).status, "errored");
  });

  it("refuses a run on a pending configuration version (422)", async () => {
    const ws = await f.client.workspaces.create(f.server.organization, { name: "pending-cv" });
    const cv = await f.client.configurationVersions.create(ws.id);
    await assert.rejects(f.client.runs.create({ workspaceId: ws.id, configurationVersionId: cv.id }), { code: "TFC_INVALID" });
  });

  it("runs with only PATH and a HOME of the run's own, gone after the phase; sends workspace extras and include", async () => {
    const ws = await f.client.workspaces.create(f.server.organization, { name: "isolated", autoApply: true });
    await f.client.variables.set(ws.id, { key: "filename", value: join(f.out, "home.txt"), category: "terraform" });
    const done = await runTo(f, ws, await module(f, "home"));
    assert.equal(done.status, "applied");
    assert.equal(done.included.plan?.status, "finished", "include=plan,apply was honoured");
    const home = await readFile(join(f.out, "home.txt"), "utf8");
    assert.ok(home.startsWith(f.server.workRoot) && home !== process.env.HOME, home);
    assert.deepEqual(await readdir(f.server.workRoot), []);
    const after = await f.client.workspaces.readById(ws.id);
    assert.equal(after.resourceCount, 1);
  });
});

describe("a server that leaves resource counts out", () => {
  const f = fixture({ variants: { omitsResourceCounts: "absent" } });

  it("still tells the changes: has-changes and the plan's JSON", async () => {
    const ws = await f.client.workspaces.create(f.server.organization, { name: "no-counts", autoApply: true });
    await f.client.variables.set(ws.id, { key: "filename", value: join(f.out, "n.txt"), category: "terraform" });
    await f.client.variables.set(ws.id, { key: "content", value: "n", category: "terraform" });
    const done = await runTo(f, ws, await module(f, "file"));
    assert.equal(done.status, "applied");
    const plan = await f.client.plans.read(done.planId!);
    assert.deepEqual([plan.hasChanges, plan.additions, plan.changes, plan.destructions], [true, undefined, undefined, undefined]);
    assert.deepEqual(await f.client.plans.outcome(done.planId!), { changesPresent: true, summary: { add: 1, change: 0, destroy: 0 } });
  });
});

describe("a server whose policy checks soft-fail", () => {
  const f = fixture({ variants: { policySoftFails: true } });

  it("stops the run at policy_soft_failed for a person: not confirmable, discardable", async () => {
    const ws = await f.client.workspaces.create(f.server.organization, { name: "policy", autoApply: true });
    await f.client.variables.set(ws.id, { key: "filename", value: join(f.out, "p.txt"), category: "terraform" });
    await f.client.variables.set(ws.id, { key: "content", value: "p", category: "terraform" });
    const stopped = await runTo(f, ws, await module(f, "file"));
    assert.equal(stopped.status, "policy_soft_failed");
    assert.ok(awaitsPerson(stopped));
    await assert.rejects(f.client.runs.apply(stopped.id), { code: "TFC_CONFLICT" });
    await f.client.runs.discard(stopped.id);
    assert.equal((await f.client.runs.read(stopped.id)).status, "discarded");
  });
});

describe("a server with a real rate limit window", () => {
  const f = fixture({ variants: { rateLimit: { limit: 3, windowMs: 100 } } });

  it("answers 429 with X-RateLimit-Reset past the limit; the client waits and every call succeeds", async () => {
    const seen = f.server.requests.length;
    const orgs = await Promise.all(Array.from({ length: 10 }, () => f.client.organization(f.server.organization)));
    assert.equal(orgs.length, 10);
    const statuses = f.server.requests.slice(seen).map((r) => r.status);
    assert.ok(statuses.includes(429), String(statuses));
    assert.equal(statuses.filter((s) => s === 200).length, 10);
    const res = await fetch(`${f.server.url}/api/v2/organizations/${f.server.organization}`, { headers: { Authorization: `Bearer ${f.server.token}` } });
    assert.match(res.headers.get("x-ratelimit-reset") ?? "", /^\d+\.\d{3}$/);
  });
});

describe("stopping the server while tofu runs", () => {
  const f = fixture({});

  /** Processes whose command line holds `marker` or whose cwd is under the server's work dir. */
  async function runProcesses(marker: string): Promise<string[]> {
    const found: string[] = [];
    for (const pid of await readdir("/proc")) {
      if (!/^\d+$/.test(pid)) continue;
      try {
        const cmd = (await readFile(`/proc/${pid}/cmdline`, "utf8")).replace(/\0/g, " ");
        const cwd = await readlink(`/proc/${pid}/cwd`);
        if (cmd.includes(marker) || cwd.startsWith(f.server.workRoot)) found.push(`${pid} ${cmd}`);
      } catch {
        /* exited meanwhile */
      }
    }
    return found;
  }

  it("cancels an applying run: its tofu and the provisioner's command end, the run is canceled", async () => {
    const ws = await f.client.workspaces.create(f.server.organization, { name: "cancel-me", autoApply: true });
    await f.client.variables.set(ws.id, { key: "filename", value: join(f.out, "cancel.txt"), category: "terraform" });
    const cv = await f.client.configurationVersions.uploadDirectory(ws.id, await module(f, "slow", 3218), { intervalMs: 10 });
    const run = await f.client.runs.create({ workspaceId: ws.id, configurationVersionId: cv.id });
    await untilProcess(run.id, "sleep 3218");
    await f.client.runs.cancel(run.id);
    assert.equal((await f.client.runs.follow(run.id, FOLLOW)).status, "canceled");
    assert.deepEqual((await runProcesses("sleep 3218")).filter((p) => p.includes("sleep 3218")), []);
    assert.equal((await f.client.workspaces.readById(ws.id)).locked, false, "the canceled run released the workspace");
  });

  /** Waits (bounded, generously) until a process with `marker` runs; fails if the run ends first. */
  async function untilProcess(runId: string, marker: string): Promise<void> {
    let ended: string | undefined;
    await waitFor(
      async () => {
        if ((await runProcesses(marker)).some((p) => p.includes(marker))) return true;
        const now = await f.client.runs.read(runId);
        if (["errored", "applied", "canceled"].includes(now.status)) ended = now.status;
        return ended !== undefined;
      },
      120_000,
      `'${marker}' to run`,
    );
    assert.equal(ended, undefined, `the run ended ${ended} before '${marker}' showed`);
  }

  it("ends every process it started (tofu, providers, provisioner commands) and removes the run directories", async () => {
    const ws = await f.client.workspaces.create(f.server.organization, { name: "slow", autoApply: true });
    await f.client.variables.set(ws.id, { key: "filename", value: join(f.out, "started.txt"), category: "terraform" });
    const cv = await f.client.configurationVersions.uploadDirectory(ws.id, await module(f, "slow", 3217), { intervalMs: 10 });
    const run = await f.client.runs.create({ workspaceId: ws.id, configurationVersionId: cv.id });
    await untilProcess(run.id, "sleep 3217");
    assert.ok(f.server.processGroups().length > 0);
    await f.server.stop();
    assert.deepEqual(await runProcesses("sleep 3217"), []);
    await assert.rejects(readdir(f.server.workRoot), { code: "ENOENT" });
  });
});
