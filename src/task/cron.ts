import { Cron as Croner } from "croner";
import { unrefTimer, type Clock } from "../time/clock.ts";

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

/** The longest wait one timer takes (setTimeout cannot wait past ~24.8 days): longer waits are chained. */
const LONGEST_WAIT_MS = 2 ** 31 - 1;

/**
 * Calls `due` at each time `cron` matches, on `clock`'s wall time, until `due` answers false or the
 * returned function stops it; never keeps the process alive. A timer that fires early (a wall clock
 * set back, a chained long wait) waits again for the same time.
 */
export function followCron(cron: Cron, clock: Clock, due: () => boolean): () => void {
  let handle: unknown;
  let stopped = false;
  const schedule = () => {
    const target = cron.next(new Date(clock.wallNow())).getTime();
    const arm = () => {
      handle = clock.setTimeout(
        () => {
          if (stopped) return;
          if (clock.wallNow() + 5 < target) return arm();
          if (due()) schedule();
        },
        Math.min(Math.max(0, target - clock.wallNow()), LONGEST_WAIT_MS),
      );
      unrefTimer(handle);
    };
    arm();
  };
  schedule();
  return () => {
    stopped = true;
    clock.clearTimeout(handle);
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
