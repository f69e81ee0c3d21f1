import type { PlanOutcome } from "./types.ts";

/** Changes in a plan's JSON (`terraform show -json`): a replacement counts as one add and one destroy. */
export function summarizePlanJson(plan: unknown): PlanOutcome {
  const p = (plan ?? {}) as { resource_changes?: { change?: { actions?: string[] } }[]; output_changes?: Record<string, { actions?: string[] }> };
  const summary = { add: 0, change: 0, destroy: 0 };
  for (const rc of p.resource_changes ?? []) {
    const actions = rc.change?.actions ?? [];
    if (actions.includes("create")) summary.add++;
    if (actions.includes("update")) summary.change++;
    if (actions.includes("delete")) summary.destroy++;
  }
  const outputsChange = Object.values(p.output_changes ?? {}).some((o) => (o.actions ?? []).some((a) => a !== "no-op"));
  return { changesPresent: summary.add + summary.change + summary.destroy > 0 || outputsChange, summary };
}
