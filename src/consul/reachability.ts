import { systemClock, type Clock } from "../time/clock.ts";
import { CtsError } from "../errors/cts-error.ts";
import type { Logger } from "../log/logger.ts";

/** Codes of a call that never reached Consul (as opposed to an answer Consul gave). */
const UNREACHABLE = new Set(["CONSUL_UNREACHABLE", "CONSUL_TIMEOUT", "CONSUL_TLS_FAILED"]);

/** True when `err` means "Consul could not be reached", not "Consul answered no". */
export function isUnreachable(err: unknown): boolean {
  return err instanceof CtsError && UNREACHABLE.has(err.code);
}

/** Whether Consul answers, as every call of the one client saw it. */
export interface ConsulReachability {
  /** True until a call fails to reach Consul; true again at the next call it answers. */
  readonly reachable: boolean;
  /** Since when Consul has been unreachable (an ISO time), while it is. */
  readonly lostSince: string | undefined;
  /** Why the last call failed to reach Consul, while it is unreachable. */
  readonly reason: string | undefined;
  /** Told on each change (false: lost, true: back). Returns the removal. */
  onChange(listener: (reachable: boolean) => void): () => void;
}

/** The tracker the transport feeds. */
export interface ReachabilityTracker extends ConsulReachability {
  /** A call Consul answered (any HTTP status). */
  answered(): void;
  /** A call failed; only a failure to reach Consul counts. */
  failed(err: unknown): void;
}

/** Reminders while Consul stays unreachable: at most one per this long. */
export const REMINDER_EVERY_MS = 60_000;

/**
 * One warn line when Consul is lost, a reminder at most every minute while it stays lost (only
 * when a call failed again), one info line when it is back; listeners hear both changes.
 */
export function createReachabilityTracker(url: () => string, log?: Logger, clock: Clock = systemClock): ReachabilityTracker {
  let lostAt: number | undefined;
  let lostSince: string | undefined;
  let reason: string | undefined;
  let remindedAt = 0;
  let failures = 0;
  const listeners = new Set<(reachable: boolean) => void>();
  const tell = (reachable: boolean) => {
    for (const l of [...listeners]) {
      try {
        l(reachable);
      } catch {
        // A listener's bug must not break the calls that feed the tracker.
      }
    }
  };
  return {
    get reachable() {
      return lostAt === undefined;
    },
    get lostSince() {
      return lostSince;
    },
    get reason() {
      return reason;
    },
    onChange(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    answered() {
      if (lostAt === undefined) return;
      const seconds = Math.round((clock.now() - lostAt) / 1000);
      log?.info(`consul: Consul at ${url()} answers again (unreachable for ${seconds} s, ${failures} failed calls); re-reading every watched query`);
      lostAt = undefined;
      lostSince = undefined;
      reason = undefined;
      failures = 0;
      tell(true);
    },
    failed(err) {
      if (!isUnreachable(err)) return;
      failures++;
      reason = (err as CtsError).message;
      const now = clock.now();
      if (lostAt === undefined) {
        lostAt = now;
        lostSince = new Date().toISOString();
        remindedAt = now;
        log?.warn(`consul: lost contact with Consul: ${reason} Tasks keep their last applied state, shown as stale, until Consul is back.`);
        tell(false);
      } else if (now - remindedAt >= REMINDER_EVERY_MS) {
        remindedAt = now;
        log?.warn(`consul: Consul at ${url()} is still unreachable (for ${Math.round((now - lostAt) / 1000)} s, ${failures} failed calls): ${reason}`);
      }
    },
  };
}
