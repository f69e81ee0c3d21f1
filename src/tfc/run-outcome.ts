import type { ResourceChange, RunResult } from "../driver/types.ts";
import { CtsError } from "../errors/cts-error.ts";
import { knownSecrets } from "../secrets/redactor.ts";
import type { TfcClient } from "./client.ts";
import { awaitsPerson } from "./runs.ts";
import type { Run } from "./types.ts";

/** Where a run happened: for messages and the run's URL. */
export interface RunPlace {
  task: string;
  workspace: string;
  url: string;
}

const MAX_RESOURCES = 100;

/**
 * A run that stopped moving, as the driver's answer: success (`applied`, `planned_and_finished`,
 * a plan-only run's `planned`) gives a RunResult with the plan's counts, resources, log and the
 * run's URL; every other end is a catalogued error naming the run, its status and URL
 * (errored: CTS's own message; waiting for confirmation, discarded, canceled, policy).
 */
export async function runOutcome(client: TfcClient, run: Run, place: RunPlace, opts: { planOnly: boolean; signal?: AbortSignal }): Promise<RunResult> {
  const where = { task: place.task, detail: { run: run.id, status: run.status, url: place.url, workspace: place.workspace } };
  const see = `See ${place.url}`;
  if (run.status === "errored")
    throw new CtsError("TFC_RUN_ERRORED", "external", knownSecrets.redact(`unexpected run status for workspace ${place.workspace}: ${run.id} errored, see logs for more details${await planErrorTail(client, run, opts.signal)}. ${see}`), where);
  if (run.status === "discarded") throw new CtsError("TFC_RUN_DISCARDED", "usage", `run ${run.id} in workspace ${place.workspace} was discarded; nothing was applied. ${see}`, where);
  if (run.status === "canceled" || run.status === "force_canceled")
    throw new CtsError("TFC_RUN_CANCELED", "usage", `run ${run.id} in workspace ${place.workspace} was ${run.status === "force_canceled" ? "force-canceled" : "canceled"} in Terraform Cloud. ${see}`, where);
  if (run.status === "policy_soft_failed" || run.status === "policy_override")
    throw new CtsError("TFC_POLICY_FAILED", "usage", `run ${run.id} in workspace ${place.workspace} stopped at a soft-failed policy check ('${run.status}'); an owner may override it. ${see}`, where);
  if (!opts.planOnly && awaitsPerson(run))
    throw new CtsError("TFC_RUN_NEEDS_CONFIRMATION", "usage", `run ${run.id} in workspace ${place.workspace} is planned and waits for confirmation (the workspace applies manually). Confirm it at ${place.url}`, where);
  const planId = run.planId ?? run.included.plan?.id;
  if (!planId) return { changesPresent: false, summary: { add: 0, change: 0, destroy: 0 }, output: "", url: place.url };
  const outcome = await client.plans.outcome(planId, opts.signal);
  const resources = outcome.changesPresent ? await resourcesOf(client, planId, opts.signal) : [];
  const output = await planLog(client, planId, opts.signal);
  return { changesPresent: outcome.changesPresent, summary: outcome.summary, ...(resources.length ? { resources } : {}), output, url: place.url };
}

/** The resources a plan changes, from its JSON (absent JSON: none listed). */
async function resourcesOf(client: TfcClient, planId: string, signal?: AbortSignal): Promise<ResourceChange[]> {
  const json = (await client.plans.json(planId, signal).catch(() => undefined)) as { resource_changes?: { address?: string; change?: { actions?: string[] } }[] } | undefined;
  const out: ResourceChange[] = [];
  for (const rc of json?.resource_changes ?? []) {
    const actions = rc.change?.actions ?? [];
    if (!rc.address || actions.every((a) => a === "no-op" || a === "read")) continue;
    const action = actions.includes("create") && actions.includes("delete") ? "replace" : (actions.find((a) => a !== "no-op") ?? "no-op");
    out.push({ address: rc.address, action });
    if (out.length >= MAX_RESOURCES) break;
  }
  return out;
}

/** The plan's log, scrubbed of known secrets (empty when the server has none). */
async function planLog(client: TfcClient, planId: string, signal?: AbortSignal): Promise<string> {
  try {
    const plan = await client.plans.read(planId, signal);
    return plan.logReadUrl ? knownSecrets.redact(await client.plans.log(plan.logReadUrl, signal)) : "";
  } catch {
    return "";
  }
}

/** The last lines of an errored plan's log that say "Error", so the event names the cause. */
async function planErrorTail(client: TfcClient, run: Run, signal?: AbortSignal): Promise<string> {
  const planId = run.planId ?? run.included.plan?.id;
  if (!planId) return "";
  const log = await planLog(client, planId, signal);
  const lines = log.split("\n").map((l) => l.trim()).filter(Boolean);
  const i = lines.findIndex((l) => /^(│\s*)?Error:/.test(l));
  if (i < 0) return "";
  return `: ${lines.slice(i, i + 4).map((l) => l.replace(/^│\s*/, "")).join(" ").slice(0, 400)}`;
}
