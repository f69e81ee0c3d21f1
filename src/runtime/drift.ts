import { parseDuration } from "../time/duration.ts";
import type { DriftCheckOption } from "../task/task.ts";
import type { ChangeSummary } from "../driver/types.ts";

export type { DriftResult, DriftState } from "../state/records.ts";
import type { DriftResult } from "../state/records.ts";

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
