import { knownSecrets } from "../secrets/redactor.ts";
import { parseDuration } from "../time/duration.ts";
import type { RunHistoryOption } from "../config/types.ts";
import { runId, type RunRecord, type RunRetention, type RunTrigger } from "../state/records.ts";
import type { RunOutcome } from "./interfaces.ts";

/** Runs kept per task by default. */
export const HISTORY_KEEP = 50;
/** How long a run is kept by default: 30 days. */
export const HISTORY_MAX_AGE = "720h";

/** The retention of the config's `history` (its defaults where it says nothing). */
export function historyRetention(option: RunHistoryOption | undefined): RunRetention {
  const maxAgeMs = option?.maxAge !== undefined ? parseDuration(option.maxAge) : undefined;
  return { keep: option?.keep ?? HISTORY_KEEP, maxAgeMs: maxAgeMs ?? parseDuration(HISTORY_MAX_AGE)! };
}

/** Errors longer than this are cut in a run record (the event keeps the whole message). */
const MAX_ERROR = 2000;

/** A run's history record, scrubbed of known secrets like its event. */
export function runRecord(task: string, trigger: RunTrigger, start: Date, end: Date, outcome: RunOutcome): RunRecord {
  const url = outcome.result?.url ?? outcome.error?.detail?.url;
  const error = outcome.error?.message;
  const changes = outcome.drift?.changes ?? outcome.result?.summary;
  return knownSecrets.redactDeep({
    id: runId(start),
    task,
    trigger,
    outcome: outcome.outcome,
    success: outcome.ok,
    start_time: start.toISOString(),
    end_time: end.toISOString(),
    duration_ms: Math.max(0, end.getTime() - start.getTime()),
    ...(outcome.synth ? { inputs_digest: outcome.synth.hash } : {}),
    ...(changes ? { plan: { changes: { add: changes.add, change: changes.change, destroy: changes.destroy }, resources: (outcome.result?.resources ?? []).map((r) => ({ address: r.address, action: r.action })) } } : {}),
    ...(typeof url === "string" ? { run_url: url } : {}),
    ...(error ? { error: error.length > MAX_ERROR ? `${error.slice(0, MAX_ERROR - 1)}…` : error } : {}),
  } satisfies RunRecord);
}

/** A page of a task's runs (newest first): up to `limit` runs older than `before` (a run id), and the cursor of the next page. */
export interface RunPage {
  runs: RunRecord[];
  /** The id to pass as `before` for the next page; absent on the last page. */
  next?: string;
  /** How many runs the task's history holds. */
  total: number;
}

/** One page of `runs` (newest first); undefined when `before` names no kept run. */
export function pageOfRuns(runs: RunRecord[], limit: number, before?: string): RunPage | undefined {
  let from = 0;
  if (before !== undefined) {
    const at = runs.findIndex((r) => r.id === before);
    if (at < 0) return undefined;
    from = at + 1;
  }
  const page = runs.slice(from, from + limit);
  const more = from + limit < runs.length;
  return { runs: page, ...(more && page.length ? { next: page[page.length - 1]!.id } : {}), total: runs.length };
}
