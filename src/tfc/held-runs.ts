import { CtsError } from "../errors/cts-error.ts";
import { pause } from "../time/pause.ts";
import type { TfcClient } from "./client.ts";
import { badAnswer } from "./errors.ts";
import type { Run } from "./types.ts";

// A run held for a task's plan guards: planned, waiting for confirmation, its id the kept plan's ref.

const RUN_ID = /^run-[A-Za-z0-9]{1,64}$/;

/** True when `ref` can be a Terraform Cloud run id (a kept ref from elsewhere, or garbage, is not). */
export function isRunId(ref: string): boolean {
  return RUN_ID.test(ref);
}

/** Statuses of a run someone confirmed: it applies (or applied) its own plan. */
const CONFIRMED = new Set(["confirmed", "apply_queued", "applying", "applied"]);

/** True when the run was confirmed already (by cts before a restart, or by a person in Terraform Cloud). */
export function wasConfirmed(run: Run): boolean {
  return CONFIRMED.has(run.status);
}

/** Statuses after which a held run is gone: nothing of it can be applied. */
const GONE = new Set(["discarded", "canceled", "force_canceled"]);

/**
 * Why an approved run cannot be confirmed, as the runtime reads it: PLAN_NOT_FOUND when it is gone
 * (not found, in another workspace, discarded or canceled in Terraform Cloud), PLAN_STALE when it
 * exists but no longer waits for confirmation (errored, stopped at a policy, ended otherwise).
 * Either way the runtime plans again and checks the new plan.
 */
export function heldRunGone(task: string, ref: string, workspace: string, run: Run | undefined, url?: string): CtsError {
  const detail = { run: ref, workspace, ...(run ? { status: run.status } : {}), ...(url ? { url } : {}) };
  if (!run) return new CtsError("PLAN_NOT_FOUND", "external", `has no held run ${ref} in workspace ${workspace} any more (deleted, or not a run of this workspace); planning again.`, { task, detail });
  if (GONE.has(run.status))
    return new CtsError("PLAN_NOT_FOUND", "external", `the held run ${ref} was ${run.status.replace("_", "-")} in Terraform Cloud; nothing was applied. Planning again.`, { task, detail });
  return new CtsError("PLAN_STALE", "external", `the held run ${ref} is '${run.status}' and can no longer be confirmed; nothing was applied. Planning again.`, { task, detail });
}

/**
 * The held run's plan as Terraform's JSON (`GET /plans/:id/json-output`, which redirects to a
 * temporary URL that is followed without the token). Terraform Cloud may answer 204 for a moment
 * after the plan finished, while it writes the JSON: asked again a few times. The JSON may hold
 * sensitive values: it is handed to the guards, never logged or stored.
 */
export async function heldPlanJson(client: TfcClient, planId: string | undefined, runId: string, opts: { signal?: AbortSignal; intervalMs: number; tries?: number }): Promise<Record<string, unknown>> {
  const site = { method: "GET", path: `/api/v2/plans/${planId ?? `(run ${runId} names no plan)`}/json-output` };
  if (!planId) throw badAnswer(site, `run ${runId} names no plan, so the plan guards have nothing to check`);
  const tries = opts.tries ?? 10;
  for (let i = 1; ; i++) {
    const json = await client.plans.json(planId, opts.signal);
    if (json && typeof json === "object" && !Array.isArray(json)) return json as Record<string, unknown>;
    if (json !== undefined) throw badAnswer(site, "the plan's JSON output is not a JSON object");
    if (i >= tries || !(await pause(opts.intervalMs, opts.signal, client.clock))) break;
  }
  throw badAnswer(site, `the plan of run ${runId} has no JSON output yet, so the plan guards cannot check it (the run still waits for confirmation and is discarded by the task's next run)`);
}
