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

const FIELDS = "[seconds] minutes hours day-of-month month day-of-week [year]";

/** Parses a cron expression; throws an Error naming the fields and the one that is wrong. */
export function parseCron(expr: string): Cron {
  let job: Croner;
  try {
    job = new Croner(expr.trim(), { paused: true, domAndDow: false });
  } catch (err) {
    const why = (err instanceof Error ? err.message : String(err)).replace(/^CronPattern:\s*/, "");
    throw new Error(`cron '${expr}' is not valid (fields: ${FIELDS}): ${why}`);
  }
  return {
    next(from: Date): Date {
      const at = job.nextRun(from);
      if (!at) throw new Error(`cron '${expr}' never matches again after ${from.toISOString()}`);
      return at;
    },
  };
}
