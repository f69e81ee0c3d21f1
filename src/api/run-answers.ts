import { CtsError } from "../errors/cts-error.ts";
import type { RunOutcome } from "../runtime/interfaces.ts";
import { ApiError, apiErrorOf } from "./http-error.ts";

/** A failed run as the API's error, its message led by `what`. */
export function failed(outcome: RunOutcome, what: string): ApiError {
  const err = outcome.error ?? new CtsError("TASK_RUN_FAILED", "external", `${what} ${outcome.outcome}`, { task: outcome.task });
  const api = apiErrorOf(err);
  return new ApiError(api.status, `${what}: ${err.message}`);
}

/** CTS's InspectPlan: the plan, and (Terraform Cloud driver) the speculative run's `url`. */
export function inspectOf(outcome: RunOutcome): { changes_present: boolean; plan: string; url?: string } {
  if (!outcome.ok) throw failed(outcome, `planning task '${outcome.task}' failed`);
  return { changes_present: outcome.result?.changesPresent ?? false, plan: outcome.result?.output ?? "", ...(outcome.result?.url ? { url: outcome.result.url } : {}) };
}

/** CTS's Run: with the Terraform Cloud driver, the run's `tfc_run_url`. */
export function runOf(outcome: RunOutcome): Record<string, unknown> {
  return {
    outcome: outcome.outcome,
    changes_present: outcome.result?.changesPresent ?? false,
    ...(outcome.result ? { summary: outcome.result.summary } : {}),
    ...(outcome.result?.url ? { tfc_run_url: outcome.result.url } : {}),
  };
}
