import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { TfcDriver } from "../../src/tfc/driver.ts";
import { TfcClient } from "../../src/tfc/client.ts";
import { ensureTaskWorkspace } from "../../src/tfc/task-workspace.ts";
import { startTfcServer, type TfcServerVariants, type TfcTestServer } from "../support/tfc-server/index.ts";
import { fileTask } from "../support/tfc-task-json.ts";

// The driver against every way servers implementing the API differ (TFC-API-NOTES.md, "Where
// servers … differ", numbered as there), each behind the test server's switch: the same task is
// created, applied again unchanged (no changes) and planned with a change, on each.

const FAST = { baseDelayMs: 1, maxDelayMs: 5 };

const VARIANTS: Array<[string, TfcServerVariants]> = [
  ["1: auto-queue-runs ignored", { ignoresAutoQueueRuns: true }],
  ["2: resource counts absent", { omitsResourceCounts: "absent" }],
  ["2: resource counts always 0", { omitsResourceCounts: "zero" }],
  ["2: no has-changes, only the plan JSON tells", { omitsResourceCounts: "absent", omitsHasChanges: true }],
  ["3: include=plan,apply ignored", { ignoresInclude: true }],
  ["3: workspaces without resource-count, outputs, locked-by", { omitsWorkspaceExtras: true }],
  ["4: duplicate variable 500, duplicate workspace 409", { duplicateVariableStatus: 500, duplicateWorkspaceStatus: 409 }],
  ["4: text/plain 401, empty 409 bodies", { textPlain401: true, emptyBody409: true }],
  ["5: url-encoded uploads fail with 500", { urlencodedUpload500: true }],
  ["6: runs on pending configuration versions accepted, then errored", { pendingConfigAcceptedThenErrors: true, uploadPendingReads: 3 }],
  ["8: runs on the server's host", { runsOnSameHost: true }],
  ["cost estimation and policy checks", { costEstimation: true, policyChecks: true }],
  ["requests are rate limited (a fixed window per token)", { rateLimit: { limit: 8, windowMs: 1000 } }],
];

for (const [name, variants] of VARIANTS) {
  describe(`the Terraform Cloud driver on a server where ${name}`, () => {
    let server: TfcTestServer;
    let driver: TfcDriver;
    let out: string;
    let work: string;

    const make = (token = server.token) =>
      new TfcDriver({ client: { hostname: server.url, token, retry: FAST }, organization: server.organization, prefix: "cts-", tags: [], tagsAllowlist: [], tagsDenylist: [], workingDir: work, pollIntervalMs: 50 });

    before(async () => {
      server = await startTfcServer({ variants });
      out = await mkdtemp(join(tmpdir(), "cts-tfc-dv-out-"));
      work = await mkdtemp(join(tmpdir(), "cts-tfc-dv-work-"));
      driver = make();
    });
    after(async () => {
      await driver?.close();
      await server?.stop();
      for (const d of [out, work]) if (d) await rm(d, { recursive: true, force: true });
    });

    it("creates and applies, answers no changes for the same inputs, and plans a change without applying it", async () => {
      const first = await driver.apply(fileTask("web", out, "v1"));
      assert.equal(first.changesPresent, true);
      assert.equal(first.summary.add, 1);
      assert.equal(await readFile(join(out, "web.txt"), "utf8"), "v1|p1");
      const again = await driver.apply(fileTask("web", out, "v1"));
      assert.deepEqual([again.changesPresent, again.summary], [false, { add: 0, change: 0, destroy: 0 }]);
      const plan = await driver.plan(fileTask("web", out, "v2"));
      assert.deepEqual([plan.changesPresent, plan.summary], [true, { add: 1, change: 0, destroy: 1 }]);
      assert.equal(await readFile(join(out, "web.txt"), "utf8"), "v1|p1");
    });

    it("plan guards: keeps a plan in a run waiting for confirmation (its JSON read), applies exactly that run, discards another; a discarded ref is PLAN_NOT_FOUND", async () => {
      const kept = await driver.planToApply(fileTask("web", out, "v2"));
      assert.equal(kept.changesPresent, true);
      assert.match(kept.ref, /^run-/);
      assert.ok(Array.isArray(kept.plan.resource_changes), "the plan's JSON, through the redirect");
      const admin = new TfcClient({ hostname: server.url, token: server.token, retry: FAST });
      try {
        const waiting = await admin.runs.read(kept.ref);
        assert.deepEqual([waiting.autoApply, waiting.actions.isConfirmable], [false, true], "created without auto-apply, waiting for confirmation");
      } finally {
        admin.close();
      }
      const applied = await driver.applyPlan(fileTask("web", out, "v2"), kept.ref);
      assert.equal(applied.changesPresent, true);
      assert.equal(await readFile(join(out, "web.txt"), "utf8"), "v2|p1");
      const other = await driver.planToApply(fileTask("web", out, "v3"));
      await driver.discardPlan("web", other.ref);
      await assert.rejects(driver.applyPlan(fileTask("web", out, "v3"), other.ref), { code: "PLAN_NOT_FOUND" });
      assert.equal(await readFile(join(out, "web.txt"), "utf8"), "v2|p1");
      // Back to what the other tests expect.
      await driver.apply(fileTask("web", out, "v1"));
    });

    it("refuses a bad token as TFC_UNAUTHORIZED", async () => {
      const bad = make("not-a-valid-token-value-0000");
      try {
        await assert.rejects(bad.apply(fileTask("web", out, "v1")), { code: "TFC_UNAUTHORIZED" });
      } finally {
        await bad.close();
      }
    });

    it("two instances creating the same new workspace at once both end up with the one workspace", async () => {
      const policy = { organization: server.organization, prefix: "cts-", tags: ["team-a"], tagsAllowlist: [], tagsDenylist: [] };
      const [a, b] = [new TfcClient({ hostname: server.url, token: server.token, retry: FAST }), new TfcClient({ hostname: server.url, token: server.token, retry: FAST })];
      try {
        const [x, y] = await Promise.all([ensureTaskWorkspace(a, policy, fileTask("race", out, "r")), ensureTaskWorkspace(b, policy, fileTask("race", out, "r"))]);
        assert.equal(x.workspace.id, y.workspace.id);
        assert.equal((await a.workspaces.list(server.organization)).filter((w) => w.name === "cts-race").length, 1);
      } finally {
        a.close();
        b.close();
      }
    });
  });
}

describe("the Terraform Cloud driver where the server cannot install the workspace's version (9), or a policy soft-fails", () => {
  let server: TfcTestServer;
  let driver: TfcDriver;
  let out: string;
  let work: string;
  before(async () => {
    server = await startTfcServer({ variants: { installableVersions: ["1.9.0"], policyChecks: true, policySoftFails: true } });
    out = await mkdtemp(join(tmpdir(), "cts-tfc-dv-out-"));
    work = await mkdtemp(join(tmpdir(), "cts-tfc-dv-work-"));
    driver = new TfcDriver({ client: { hostname: server.url, token: server.token, retry: FAST }, organization: server.organization, prefix: "", tags: [], tagsAllowlist: [], tagsDenylist: [], workingDir: work, pollIntervalMs: 50 });
  });
  after(async () => {
    await driver?.close();
    await server?.stop();
    for (const d of [out, work]) if (d) await rm(d, { recursive: true, force: true });
  });

  it("reports the errored run of a version the server cannot install", async () => {
    await assert.rejects(driver.apply({ ...fileTask("old", out, "x"), terraformCloudWorkspace: { terraformVersion: "1.5.7" } }), (err: any) => err.code === "TFC_RUN_ERRORED" && /errored, see logs/.test(err.message));
  });

  it("reports a run stopped by a soft-failed policy as TFC_POLICY_FAILED", async () => {
    await assert.rejects(driver.apply({ ...fileTask("policy", out, "x"), terraformCloudWorkspace: { terraformVersion: "1.9.0" } }), { code: "TFC_POLICY_FAILED" });
  });
});
