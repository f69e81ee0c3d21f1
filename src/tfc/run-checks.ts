import type { RunChecks } from "../driver/types.ts";
import type { TfcClient } from "./client.ts";
import type { CostEstimate, PolicyCheck, Run } from "./types.ts";

/** Policy check statuses, worst first: the summary shows the worst one the run's checks reached. */
const POLICY_SEVERITY = ["errored", "hard_failed", "soft_failed", "overridden", "unreachable", "canceled", "queued", "pending", "running", "passed"];

/**
 * What Terraform Cloud's own checks said of a run, for its event: the policy checks added up
 * (passed, failed by enforcement level, the worst status) and the cost estimate (monthly costs
 * and delta). Read only when the run went through them (its status timestamps or its cost-estimate
 * relationship say so), so a run in an organization without policies or cost estimation costs no
 * extra request. A failed read leaves the part out: the checks inform, they never fail the run.
 */
export async function runChecks(client: TfcClient, run: Run, signal?: AbortSignal): Promise<RunChecks | undefined> {
  const steps = Object.keys(run.statusTimestamps);
  const checks: RunChecks = {};
  if (steps.some((k) => k.startsWith("policy-")) || run.status.startsWith("policy_")) {
    const policies = await client.runs.policyChecks(run.id, signal).catch(() => undefined);
    if (policies?.length) checks.policies = policySummary(policies);
  }
  if (run.costEstimateId) {
    const estimate = await client.runs.costEstimate(run.costEstimateId, signal).catch(() => undefined);
    if (estimate) checks.cost_estimate = costSummary(estimate);
  }
  return checks.policies || checks.cost_estimate ? checks : undefined;
}

/** The policy checks of a run as one summary. */
export function policySummary(checks: PolicyCheck[]): NonNullable<RunChecks["policies"]> {
  const rank = (s: string) => {
    const i = POLICY_SEVERITY.indexOf(s);
    return i < 0 ? POLICY_SEVERITY.length : i;
  };
  const worst = checks.map((c) => c.status).sort((a, b) => rank(a) - rank(b))[0] ?? "";
  const sum = (f: (c: PolicyCheck) => number) => checks.reduce((n, c) => n + f(c), 0);
  return {
    status: worst,
    passed: sum((c) => c.passed),
    failed: sum((c) => c.totalFailed || c.hardFailed + c.softFailed + c.advisoryFailed),
    hard_failed: sum((c) => c.hardFailed),
    soft_failed: sum((c) => c.softFailed),
    advisory_failed: sum((c) => c.advisoryFailed),
  };
}

/** A cost estimate as the event shows it. */
export function costSummary(e: CostEstimate): NonNullable<RunChecks["cost_estimate"]> {
  return {
    status: e.status,
    ...(e.priorMonthlyCost !== undefined ? { prior_monthly_cost: e.priorMonthlyCost } : {}),
    ...(e.proposedMonthlyCost !== undefined ? { proposed_monthly_cost: e.proposedMonthlyCost } : {}),
    ...(e.deltaMonthlyCost !== undefined ? { delta_monthly_cost: e.deltaMonthlyCost } : {}),
    ...(e.resourcesCount !== undefined ? { resources: e.resourcesCount } : {}),
    ...(e.matchedResourcesCount !== undefined ? { matched_resources: e.matchedResourcesCount } : {}),
  };
}

/** The checks in a few words, for the driver's log ("policies passed (2 passed); cost +12.50/month"). */
export function checksWords(c: RunChecks): string {
  const parts: string[] = [];
  if (c.policies) {
    const p = c.policies;
    parts.push(`policies ${p.status} (${p.passed} passed${p.failed ? `, ${p.failed} failed: ${p.hard_failed} hard, ${p.soft_failed} soft, ${p.advisory_failed} advisory` : ""})`);
  }
  if (c.cost_estimate) {
    const e = c.cost_estimate;
    parts.push(e.delta_monthly_cost !== undefined ? `cost estimate ${e.status}: ${signed(e.delta_monthly_cost)}/month (${e.proposed_monthly_cost ?? "?"} proposed)` : `cost estimate ${e.status}`);
  }
  return parts.join("; ");
}

function signed(n: string): string {
  return n.startsWith("-") || n.startsWith("+") ? n : `+${n}`;
}
