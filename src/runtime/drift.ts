import { parseDuration } from "../time/duration.ts";
import type { DriftCheckOption } from "../task/task.ts";
import type { ChangeSummary } from "../driver/types.ts";

/**
 * What a drift check found:
 * - `in-sync`: the plan against the last applied JSON changes nothing;
 * - `drifted`: it would change something while the inputs are unchanged (changed out of band);
 * - `corrected`: drifted, and `correct: true` applied the last applied JSON again;
 * - `inputs-changed`: the inputs differ from the last apply, so a plan cannot tell drift from a
 *   pending change (the task's next run applies it);
 * - `not-applied`: this process has not applied the task yet, so there is nothing to compare with;
 * - `failed`: the check itself failed (see `error`).
 */
export type DriftState = "in-sync" | "drifted" | "corrected" | "inputs-changed" | "not-applied" | "failed";

/** The last drift check of a task. */
export interface DriftResult {
  state: DriftState;
  /** When the check ended (ISO time). */
  checkedAt: string;
  /** What the plan would change (drifted, corrected). */
  changes?: ChangeSummary;
  /** What the correcting apply changed. */
  applied?: ChangeSummary;
  /** Why the check failed. */
  error?: string;
}

/** A task's effective drift check settings. */
export interface DriftSettings {
  enabled: boolean;
  /** Interval in ms (0 when off). */
  everyMs: number;
  correct: boolean;
}

/** Drift checks are off unless configured. */
export const DRIFT_OFF: DriftSettings = { enabled: false, everyMs: 0, correct: false };

/** The settings a task checks drift with: its own `driftCheck` wins over the config's; `false` turns it off. */
export function driftSettings(global: DriftCheckOption | false | undefined, own: DriftCheckOption | false | undefined): DriftSettings {
  const pick = own === undefined ? global : own;
  if (!pick) return DRIFT_OFF;
  const everyMs = parseDuration(pick.every);
  // Validation (task/validate.ts) refuses bad values at load; this only guards API-created tasks.
  if (everyMs === undefined || everyMs <= 0) return DRIFT_OFF;
  return { enabled: true, everyMs, correct: pick.correct === true };
}

/** Whether a drift check result is worth an event (events are few: CTS keeps 5 per task). */
export function driftIsNews(r: DriftResult): boolean {
  return r.state === "drifted" || r.state === "corrected";
}
