import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ERROR_CATALOGUE, type ErrorCode } from "../../src/errors/catalogue.ts";
import { TfcDriver } from "../../src/tfc/driver.ts";
import { TfcClient } from "../../src/tfc/client.ts";
import { startTfcServer, type TfcTestServer } from "../support/tfc-server/index.ts";
import { brokenTask, fileTask } from "../support/tfc-task-json.ts";

const FAST = { baseDelayMs: 1, maxDelayMs: 5 };
const READ_ONLY = "read-only-token-0123456789abcdef";
const SITE_ADMIN = "site-admin-token-0123456789abcdef";

describe("the Terraform Cloud driver against the TFE-API test server (real OpenTofu runs)", () => {
  let server: TfcTestServer;
  let driver: TfcDriver;
  let admin: TfcClient;
  let out: string;
  let work: string;
  const lines: string[] = [];

  function newDriver(over: Partial<ConstructorParameters<typeof TfcDriver>[0]> = {}): TfcDriver {
    return new TfcDriver({
      client: { hostname: server.url, token: server.token, retry: FAST },
      organization: server.organization,
      prefix: "cts-",
      tags: ["team-a"],
      tagsAllowlist: [],
      tagsDenylist: ["frozen"],
      workingDir: work,
      pollIntervalMs: 50,
      log: (task, line) => lines.push(`[${task}] ${line}`),
      ...over,
    });
  }

  before(async () => {
    server = await startTfcServer({
      agentPools: [{ organization: "cts-test", name: "pool-a" }],
      tokens: [
        { token: READ_ONLY, organizations: { "cts-test": "read" } },
        { token: SITE_ADMIN, organizations: { "cts-test": "write" }, siteAdmin: true },
      ],
      // What a Terraform Enterprise may offer: the newest CTS may use is 1.13.0 (1.15.0 is past CTS's
      // constraint, 1.14.3 deprecated, 1.14.2 a beta, 1.14.1 disabled), listed out of order.
      terraformVersions: [
        { version: "1.5.7" },
        { version: "1.15.0" },
        { version: "1.13.0" },
        { version: "1.14.3", deprecated: true },
        { version: "1.14.2", beta: true },
        { version: "1.14.1", enabled: false },
        { version: "1.12.2" },
      ],
    });
    out = await mkdtemp(join(tmpdir(), "cts-tfc-driver-out-"));
    work = await mkdtemp(join(tmpdir(), "cts-tfc-driver-work-"));
    driver = newDriver();
    admin = new TfcClient({ hostname: server.url, token: server.token, retry: FAST });
  });
  after(async () => {
    await driver?.close();
    admin?.close();
    await server?.stop();
    for (const d of [out, work]) if (d) await rm(d, { recursive: true, force: true });
  });

  it("creates the task's workspace with CTS's settings and tags, and applies the task: the file is written, the run URL returned", async () => {
    const result = await driver.apply({ ...fileTask("web", out, "v1"), description: "web task" });
    assert.equal(await readFile(join(out, "web.txt"), "utf8"), "v1|p1");
    assert.deepEqual([result.changesPresent, result.summary], [true, { add: 1, change: 0, destroy: 0 }]);
    assert.deepEqual(result.resources, [{ address: "local_file.out", action: "create" }]);
    const ws = (await admin.workspaces.read(server.organization, "cts-web"))!;
    assert.deepEqual([ws.description, ws.autoApply, ws.executionMode, ws.tags], ["web task", true, "remote", ["source:cts", "team-a"]]);
    assert.match(result.url!, new RegExp(`^${server.url}/app/cts-test/workspaces/cts-web/runs/run-`));
    const vars = await admin.variables.list(ws.id);
    assert.deepEqual(
      vars.map((v) => [v.key, v.category, v.hcl, v.sensitive, v.value]).sort(),
      [["TASK_ENV_X", "env", false, true, ""], ["content", "terraform", false, true, ""], ["prov", "terraform", true, true, ""]],
      "inputs are sensitive workspace variables; the provider object is HCL",
    );
    assert.ok(existsSync(driver.taskDir("web")), "the task's local folder exists for the applied hash");
  });

  it("applies a change (a new variable value) and answers with what changed", async () => {
    const result = await driver.apply(fileTask("web", out, "v2"));
    assert.equal(await readFile(join(out, "web.txt"), "utf8"), "v2|p1");
    assert.equal(result.changesPresent, true);
    assert.deepEqual(result.resources, [{ address: "local_file.out", action: "replace" }]);
  });

  it("answers no changes for the same configuration and variables (the run ends planned_and_finished)", async () => {
    const result = await driver.apply(fileTask("web", out, "v2"));
    assert.deepEqual([result.changesPresent, result.summary, result.resources], [false, { add: 0, change: 0, destroy: 0 }, undefined]);
    const run = await admin.runs.read(result.url!.split("/").at(-1)!);
    assert.equal(run.status, "planned_and_finished");
  });

  it("plans speculatively (inspect): the change is shown with the plan log and URL, nothing is applied", async () => {
    const result = await driver.plan(fileTask("web", out, "v3"));
    assert.equal(result.changesPresent, true);
    assert.match(result.output, /Plan: 1 to add, 0 to change, 1 to destroy/);
    const run = await admin.runs.read(result.url!.split("/").at(-1)!);
    assert.equal(run.planOnly, true);
    assert.equal(await readFile(join(out, "web.txt"), "utf8"), "v2|p1");
  });

  it("reports an errored run with CTS's message, the run id, tofu's error and the URL", async () => {
    await assert.rejects(driver.apply(brokenTask("broken")), (err: any) => {
      assert.equal(err.code, "TFC_RUN_ERRORED");
      assert.match(err.message, /unexpected run status for workspace cts-broken: run-\S+ errored, see logs for more details/);
      assert.match(err.message, /undeclared input variable/);
      assert.match(err.message, /See http:\/\/127\.0\.0\.1:\d+\/app\/cts-test\/workspaces\/cts-broken\/runs\/run-/);
      return true;
    });
  });

  it("reports a run waiting for confirmation on a manual-apply workspace, and discards it when the next change comes", async () => {
    server.store.addWorkspace(server.organization, "cts-manual", { autoApply: false, tags: ["source:cts"] });
    let waiting = "";
    await assert.rejects(driver.apply(fileTask("manual", out, "m1")), (err: any) => {
      assert.equal(err.code, "TFC_RUN_NEEDS_CONFIRMATION");
      waiting = err.detail.run;
      return /waits for confirmation/.test(err.message);
    });
    assert.equal(existsSync(join(out, "manual.txt")), false);
    assert.equal((await admin.workspaces.read(server.organization, "cts-manual"))!.autoApply, false, "manual apply is kept");
    let second = "";
    await assert.rejects(driver.apply(fileTask("manual", out, "m2")), (err: any) => {
      second = err.detail.run;
      return err.code === "TFC_RUN_NEEDS_CONFIRMATION";
    });
    assert.equal((await admin.runs.read(waiting)).status, "discarded");
    // A restarted cts (a new driver) finds its predecessor's run still waiting and discards it too.
    const restarted = newDriver();
    try {
      await assert.rejects(restarted.apply(fileTask("manual", out, "m3")), { code: "TFC_RUN_NEEDS_CONFIRMATION" });
      assert.equal((await admin.runs.read(second)).status, "discarded");
    } finally {
      await restarted.close();
    }
  });

  it("reports a run canceled in Terraform Cloud as TFC_RUN_CANCELED", async () => {
    server.faults.runsNeverFinish = true;
    try {
      const applying = driver.apply(fileTask("gone", out, "g1"));
      const run = await until(async () => (await admin.workspaces.read(server.organization, "cts-gone").catch(() => undefined)) && lines.find((l) => l.startsWith("[gone] apply run "))?.match(/run (run-\S+) queued/)?.[1]);
      await admin.runs.cancel(run);
      await assert.rejects(applying, { code: "TFC_RUN_CANCELED" });
    } finally {
      server.faults.runsNeverFinish = false;
    }
  });

  it("waits for a workspace someone locked, and runs once it is unlocked", async () => {
    const ws = (await admin.workspaces.read(server.organization, "cts-web"))!;
    await admin.workspaces.lock(ws.id, "maintenance");
    const applying = driver.apply(fileTask("web", out, "v4"));
    await until(async () => lines.some((l) => l.startsWith("[web] workspace cts-web is locked by user")));
    assert.equal(await readFile(join(out, "web.txt"), "utf8"), "v2|p1");
    await admin.workspaces.unlock(ws.id);
    assert.equal((await applying).changesPresent, true);
    assert.equal(await readFile(join(out, "web.txt"), "utf8"), "v4|p1");
  });

  it("gives up on a workspace that stays locked past the limit, queuing no run", async () => {
    const short = newDriver({ lockTimeoutMs: 200 });
    const ws = (await admin.workspaces.read(server.organization, "cts-web"))!;
    await admin.workspaces.lock(ws.id, "maintenance");
    const runsBefore = server.requests.filter((r) => r.method === "POST" && r.path === "/api/v2/runs").length;
    try {
      await assert.rejects(short.apply(fileTask("web", out, "v5")), (err: any) => err.code === "TFC_WORKSPACE_LOCKED" && /stayed locked by user/.test(err.message));
      assert.equal(server.requests.filter((r) => r.method === "POST" && r.path === "/api/v2/runs").length, runsBefore);
    } finally {
      await admin.workspaces.unlock(ws.id);
      await short.close();
    }
  });

  it("refuses a bad token with TFC_UNAUTHORIZED, never showing the token", async () => {
    const bad = newDriver({ client: { hostname: server.url, token: "bad-token-0123456789abcdef", retry: FAST } });
    try {
      await assert.rejects(bad.apply(fileTask("web", out, "v9")), (err: any) => err.code === "TFC_UNAUTHORIZED" && !err.message.includes("bad-token-0123456789abcdef"));
    } finally {
      await bad.close();
    }
  });

  it("names what is wrong when the server is unreachable, the token may only read, or the organization does not exist", async () => {
    const unreachable = newDriver({ client: { hostname: "http://127.0.0.1:1", token: server.token, retry: { ...FAST, attempts: 2 } } });
    const reader = newDriver({ client: { hostname: server.url, token: READ_ONLY, retry: FAST } });
    const noOrg = newDriver({ organization: "no-such-org" });
    try {
      await assert.rejects(unreachable.apply(fileTask("web", out, "x")), { code: "TFC_UNREACHABLE" });
      await assert.rejects(reader.apply(fileTask("reader", out, "x")), (err: any) => err.code === "TFC_FORBIDDEN" && !err.message.includes(READ_ONLY));
      await assert.rejects(noOrg.apply(fileTask("web", out, "x")), { code: "TFC_NOT_FOUND" });
    } finally {
      await Promise.all([unreachable.close(), reader.close(), noOrg.close()]);
    }
  });

  it("keeps a token the server echoes in an error body out of the error (TFC_SERVER_ERROR after retries)", async () => {
    server.faults.echoTokenInErrors = true;
    server.faults.failRoutes = [{ method: "POST", path: /\/configuration-versions$/, status: 500 }];
    try {
      await assert.rejects(driver.apply(fileTask("web", out, "v7")), (err: any) => /^TFC_(SERVER_ERROR|INVALID)$/.test(err.code) && !err.message.includes(server.token) && !JSON.stringify(err.detail).includes(server.token));
      assert.equal(lines.some((l) => l.includes(server.token)), false);
    } finally {
      server.faults.echoTokenInErrors = false;
      server.faults.failRoutes = [];
    }
  });

  it("reports a 409 on queuing the run as TFC_CONFLICT and a 422 on a variable as TFC_INVALID: catalogued, with the fix, never the token the server echoes", async () => {
    server.faults.echoTokenInErrors = true;
    const clean = (err: any) => !err.message.includes(server.token) && !JSON.stringify(err.detail ?? {}).includes(server.token) && Boolean(ERROR_CATALOGUE[err.code as ErrorCode]?.fix);
    try {
      server.faults.failRoutes = [{ method: "POST", path: /\/runs$/, status: 409 }];
      await assert.rejects(driver.apply(fileTask("conflicted", out, "c1")), (err: any) => err.code === "TFC_CONFLICT" && clean(err));
      server.faults.failRoutes = [{ method: "POST", path: /\/vars$/, status: 422 }, { method: "PATCH", path: /\/vars\/[^/]+$/, status: 422 }];
      await assert.rejects(driver.apply(fileTask("invalid", out, "i1")), (err: any) => err.code === "TFC_INVALID" && clean(err));
      assert.equal(lines.some((l) => l.includes(server.token)), false, "no log line holds the token");
    } finally {
      server.faults.echoTokenInErrors = false;
      server.faults.failRoutes = [];
    }
  });

  it("rides out rate limiting (429 with X-RateLimit-Reset) and still applies", async () => {
    server.faults.rateLimitNext = { count: 3, resetSeconds: 0.05 };
    const result = await driver.apply(fileTask("web", out, "v6"));
    assert.equal(result.changesPresent, true);
    assert.equal(await readFile(join(out, "web.txt"), "utf8"), "v6|p1");
    assert.ok(server.requests.filter((r) => r.status === 429).length >= 3);
  });

  it("deletes the variables it set that the task no longer has, leaving those people set", async () => {
    const ws = (await admin.workspaces.read(server.organization, "cts-web"))!;
    await admin.variables.create(ws.id, { key: "by_person", value: "keep", category: "env" });
    const task = fileTask("web", out, "v8");
    delete task.env!.TASK_ENV_X;
    await driver.apply(task);
    assert.deepEqual((await admin.variables.list(ws.id)).map((v) => v.key).sort(), ["by_person", "content", "prov"]);
    assert.equal(await readFile(join(out, "web.txt"), "utf8"), "v8|p1");
  });

  it("refuses VCS-connected, local-mode and denied workspaces, and (with an allowlist) an unlisted one, changing none of them", async () => {
    server.store.addWorkspace(server.organization, "cts-vcs", { vcsRepo: { identifier: "acme/infra" } } as never);
    server.store.addWorkspace(server.organization, "cts-local", { executionMode: "local" });
    server.store.addWorkspace(server.organization, "cts-frozen", { tags: ["frozen", "team-a"] });
    server.store.addWorkspace(server.organization, "cts-other", { tags: ["team-b"] });
    for (const [task, why] of [["vcs", /connected to a VCS repository/], ["local", /uses local execution/], ["frozen", /tag frozen of driver.terraformCloud.workspaces.tagsDenylist/]] as const)
      await assert.rejects(driver.apply(fileTask(task, out, "x")), (err: any) => err.code === "TFC_WORKSPACE_REFUSED" && why.test(err.message));
    const allow = newDriver({ tagsAllowlist: ["team-a"] });
    try {
      await assert.rejects(allow.apply(fileTask("other", out, "x")), (err: any) => err.code === "TFC_WORKSPACE_REFUSED" && /none of the tags/.test(err.message));
    } finally {
      await allow.close();
    }
    for (const name of ["cts-vcs", "cts-local", "cts-frozen", "cts-other"]) assert.equal((await admin.workspaces.read(server.organization, name))!.tags.includes("source:cts"), false, name);
  });

  it("a new workspace whose task names no Terraform version gets the newest the server offers within CTS's constraint; the list is read once", async () => {
    const byAdmin = newDriver({ client: { hostname: server.url, token: SITE_ADMIN, retry: FAST } });
    const listed = () => server.requests.filter((r) => r.path === "/api/v2/admin/terraform-versions").length;
    const before = listed();
    try {
      await byAdmin.apply(fileTask("newest", out, "n1"));
      await byAdmin.apply(fileTask("newest-2", out, "n2"));
      await byAdmin.apply({ ...fileTask("pinned", out, "p1"), terraformCloudWorkspace: { terraformVersion: "1.5.7" } });
    } finally {
      await byAdmin.close();
    }
    const version = async (name: string) => (await admin.workspaces.read(server.organization, name))!.terraformVersion;
    assert.deepEqual([await version("cts-newest"), await version("cts-newest-2"), await version("cts-pinned")], ["1.13.0", "1.13.0", "1.5.7"]);
    assert.equal(listed() - before, 1, "the versions are listed once per driver");
    assert.ok(lines.some((l) => l === "[newest] new workspaces get Terraform 1.13.0, the newest version the server offers within >= 0.13.0, <= 1.14.3"), lines.join("\n"));
  });

  it("with a token that may not list the versions (HCP Terraform, or no TFE site admin), a new workspace gets the server's default version", async () => {
    server.store.addTerraformVersion("1.14.0");
    const mark = server.requests.length;
    const plain = newDriver();
    try {
      await plain.apply(fileTask("server-default", out, "d1"));
    } finally {
      await plain.close();
    }
    const seen = server.requests.slice(mark).filter((r) => r.path === "/api/v2/admin/terraform-versions");
    assert.deepEqual(seen.map((r) => r.status), [404], "asked once, refused as TFE refuses a non-admin");
    assert.equal((await admin.workspaces.read(server.organization, "cts-server-default"))!.terraformVersion, "1.9.0", "the test server's default, not one picked by cts");
    assert.ok(lines.some((l) => l.startsWith("[server-default] the token may not list the server's Terraform versions")), lines.join("\n"));
  });

  it("adds missing tags to a found workspace (never removing any) and applies the task's mode, pool and version", async () => {
    server.store.addWorkspace(server.organization, "cts-agent", { tags: ["keep"], terraformVersion: "1.5.0" });
    const ws = { ...fileTask("agent", out, "a1"), terraformCloudWorkspace: { executionMode: "agent" as const, agentPoolName: "pool-a", terraformVersion: "1.9.0" } };
    server.faults.runsNeverFinish = true;
    const ctrl = new AbortController();
    try {
      const applying = driver.apply(ws, { signal: ctrl.signal });
      await until(async () => lines.some((l) => l.startsWith("[agent] apply run ")));
      const found = (await admin.workspaces.read(server.organization, "cts-agent"))!;
      const pool = (await admin.agentPools(server.organization)).find((p) => p.name === "pool-a")!;
      assert.deepEqual([found.tags, found.executionMode, found.agentPoolId, found.terraformVersion], [["keep", "source:cts", "team-a"], "agent", pool.id, "1.9.0"]);
      ctrl.abort();
      await assert.rejects(applying, { code: "TERRAFORM_CANCELLED" });
      const runId = lines.find((l) => l.startsWith("[agent] apply run "))!.match(/run (run-\S+) queued/)![1]!;
      assert.equal((await admin.runs.read(runId)).status, "canceled", "a stopped operation cancels its run");
    } finally {
      server.faults.runsNeverFinish = false;
    }
  });

  it("stops following a run that never finishes at the time limit, naming the run's URL", async () => {
    server.faults.runsNeverFinish = true;
    try {
      await assert.rejects(driver.apply(fileTask("slow", out, "s1"), { timeoutMs: 1500 }), (err: any) => err.code === "TFC_RUN_TIMEOUT" && /See http/.test(err.message));
    } finally {
      server.faults.runsNeverFinish = false;
    }
  });

  it("destroys what the task's workspace holds", async () => {
    const result = await driver.destroy(fileTask("web", out, "v6"));
    assert.equal(result.summary.destroy, 1);
    assert.equal(existsSync(join(out, "web.txt")), false);
  });
});

/** Polls `probe` until it answers something truthy (at most two minutes). */
async function until<T>(probe: () => Promise<T | undefined | false>): Promise<T> {
  const deadline = Date.now() + 120_000;
  for (;;) {
    const v = await probe();
    if (v) return v;
    if (Date.now() > deadline) throw new Error("condition not reached in 2 minutes");
    await new Promise((r) => setTimeout(r, 25));
  }
}
