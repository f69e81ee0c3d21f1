import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { heldRunGone, isRunId, wasConfirmed } from "../../src/tfc/held-runs.ts";
import { checksWords, costSummary, policySummary } from "../../src/tfc/run-checks.ts";
import type { Run } from "../../src/tfc/types.ts";

const run = (status: string): Run => ({
  id: "run-abc",
  status,
  statusTimestamps: {},
  message: "",
  isDestroy: false,
  autoApply: false,
  planOnly: false,
  hasChanges: true,
  actions: { isConfirmable: false, isDiscardable: false, isCancelable: false },
  workspaceId: "ws-1",
  configurationVersionId: undefined,
  planId: undefined,
  applyId: undefined,
  costEstimateId: undefined,
  included: {},
});

describe("Terraform Cloud held runs: what an approved run that cannot be confirmed means to the runtime", () => {
  it("a run that is gone (not found, discarded, canceled) is PLAN_NOT_FOUND; one that ended otherwise is PLAN_STALE; both name the run", () => {
    assert.equal(heldRunGone("t", "run-abc", "cts-t", undefined).code, "PLAN_NOT_FOUND");
    for (const s of ["discarded", "canceled", "force_canceled"]) assert.equal(heldRunGone("t", "run-abc", "cts-t", run(s)).code, "PLAN_NOT_FOUND", s);
    for (const s of ["errored", "planned_and_finished", "policy_soft_failed"]) assert.equal(heldRunGone("t", "run-abc", "cts-t", run(s)).code, "PLAN_STALE", s);
    const err = heldRunGone("t", "run-abc", "cts-t", run("discarded"), "https://tfc/runs/run-abc");
    assert.match(err.message, /held run run-abc was discarded in Terraform Cloud; nothing was applied/);
    assert.deepEqual(err.detail, { run: "run-abc", workspace: "cts-t", status: "discarded", url: "https://tfc/runs/run-abc" });
  });

  it("a run someone confirmed (confirmed, queued to apply, applying, applied) is followed, not planned again", () => {
    for (const s of ["confirmed", "apply_queued", "applying", "applied"]) assert.equal(wasConfirmed(run(s)), true, s);
    for (const s of ["planned", "discarded", "errored"]) assert.equal(wasConfirmed(run(s)), false, s);
  });

  it("only a run id is taken as a ref (a local plan file's name or garbage from a store is not sent to the API)", () => {
    assert.equal(isRunId("run-CZcmD7eagjhyX0vN"), true);
    for (const r of ["", ".cts-kept-1.tfplan", "run-", "run-../x", "ws-abc"]) assert.equal(isRunId(r), false, r);
  });
});

describe("Terraform Cloud's policy checks and cost estimate, summarized for the run's event", () => {
  it("adds up policy checks: the worst status, passed and failed by enforcement level", () => {
    const s = policySummary([
      { id: "p1", status: "passed", passed: 2, totalFailed: 0, hardFailed: 0, softFailed: 0, advisoryFailed: 0 },
      { id: "p2", status: "soft_failed", passed: 1, totalFailed: 2, hardFailed: 0, softFailed: 1, advisoryFailed: 1 },
    ]);
    assert.deepEqual(s, { status: "soft_failed", passed: 3, failed: 2, hard_failed: 0, soft_failed: 1, advisory_failed: 1 });
    assert.equal(policySummary([{ id: "p", status: "hard_failed", passed: 0, totalFailed: 1, hardFailed: 1, softFailed: 0, advisoryFailed: 0 }, { id: "q", status: "soft_failed", passed: 0, totalFailed: 1, hardFailed: 0, softFailed: 1, advisoryFailed: 0 }]).status, "hard_failed");
  });

  it("keeps the cost estimate's monthly costs as the server sends them, leaving out what it does not say", () => {
    assert.deepEqual(costSummary({ id: "ce", status: "finished", priorMonthlyCost: "10.00", proposedMonthlyCost: "22.50", deltaMonthlyCost: "12.50", resourcesCount: 4, matchedResourcesCount: 3 }), {
      status: "finished",
      prior_monthly_cost: "10.00",
      proposed_monthly_cost: "22.50",
      delta_monthly_cost: "12.50",
      resources: 4,
      matched_resources: 3,
    });
    assert.deepEqual(costSummary({ id: "ce", status: "errored", priorMonthlyCost: undefined, proposedMonthlyCost: undefined, deltaMonthlyCost: undefined, resourcesCount: undefined, matchedResourcesCount: undefined }), { status: "errored" });
  });

  it("says the checks in a line for the log, with the sign of the cost delta", () => {
    assert.equal(
      checksWords({ policies: { status: "soft_failed", passed: 1, failed: 1, hard_failed: 0, soft_failed: 1, advisory_failed: 0 }, cost_estimate: { status: "finished", delta_monthly_cost: "12.50", proposed_monthly_cost: "22.50" } }),
      "policies soft_failed (1 passed, 1 failed: 0 hard, 1 soft, 0 advisory); cost estimate finished: +12.50/month (22.50 proposed)",
    );
  });
});
