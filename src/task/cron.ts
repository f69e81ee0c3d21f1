import { Cron as Croner } from "croner";

/**
 * Cron expressions as CTS accepts them (hashicorp/cronexpr): 5 fields (minute hour day month
 * weekday), 6 (seconds first) or 7 (seconds first, year last), names, `?`, and the @shortcuts.
 * Parsing and matching are croner's; times are local. Day-of-month and day-of-week combine with
 * OR, as in classic cron and cronexpr.
 */
export interface Cron {
  /** The next matching time strictly after `from`. */
  next(from: Date): Date;
}

const NAMES = ["seconds", "minutes", "hours", "day of month", "month", "day of week", "year"];

/** Parses a cron expression; throws an Error naming the fields and the one that is wrong. */
export function parseCron(expr: string): Cron {
  let job: Croner;
  try {
    job = new Croner(expr.trim(), { paused: true, domAndDow: false });
  } catch (err) {
    throw new Error(explain(expr, err));
  }
  if (!job.nextRun()) throw new Error(`cron '${expr}' never matches again (a year in the past?)`);
  return {
    next(from: Date): Date {
      const at = job.nextRun(from);
      if (!at) throw new Error(`cron '${expr}' never matches again after ${from.toISOString()}`);
      return at;
    },
  };
}

const why = (err: unknown) => (err instanceof Error ? err.message : String(err)).replace(/^CronPattern:\s*/, "");

/** Names the wrong field, as the hand-written parser did: croner's message alone does not always. */
function explain(expr: string, err: unknown): string {
  const parts = expr.trim().split(/\s+/);
  if (parts.length < 5 || parts.length > 7 || parts[0]!.startsWith("@"))
    return `cron '${expr}' has ${parts.length} fields; use 5 (min hour dom month dow), 6 (with seconds first) or 7 (with a year last): ${why(err)}`;
  const full = parts.length === 5 ? ["0", ...parts, "*"] : parts.length === 6 ? [...parts, "*"] : parts;
  for (let i = 0; i < 7; i++) {
    const alone = full.map((p, j) => (j === i ? p : j === 0 ? "0" : "*"));
    try {
      new Croner(alone.join(" "), { paused: true });
    } catch (e) {
      return `cron ${NAMES[i]} field '${full[i]}': ${why(e)}`;
    }
  }
  return `cron '${expr}': ${why(err)}`;
}
