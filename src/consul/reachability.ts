import { systemClock, type Clock } from "../time/clock.ts";
import { CtsError } from "../errors/cts-error.ts";
import type { Logger } from "../log/logger.ts";

/** Codes of a call that never reached Consul (as opposed to an answer Consul gave); high availability's own too. */
const UNREACHABLE = new Set(["CONSUL_UNREACHABLE", "CONSUL_TIMEOUT", "CONSUL_TLS_FAILED", "HA_CONSUL_UNREACHABLE", "HA_CONSUL_TIMEOUT"]);

/** True when `err` means "Consul could not be reached", not "Consul answered no". */
export function isUnreachable(err: unknown): boolean {
  return err instanceof CtsError && UNREACHABLE.has(err.code);
}

/**
 * Consul's words for "the servers have no leader": a follower or client agent answers HTTP 500
 * `No cluster leader` (or `rpc error making call: No cluster leader`) after its RPC hold time; a
 * leader that lost quorum mid-write says `leadership lost while committing log`.
 */
const NO_LEADER = /no cluster leader|leadership lost/i;

/** HTTP statuses that mean "Consul (or the proxy in front of it) cannot serve now". */
const UNAVAILABLE_STATUS = new Set([502, 503, 504]);

/**
 * True when `err` is an answer Consul gave that says it cannot serve: no leader (quorum lost,
 * an election in progress) or a 502/503/504.
 */
export function isLeaderless(err: unknown): boolean {
  if (!(err instanceof CtsError)) return false;
  const status = err.detail.status;
  if (typeof status !== "number") return false;
  if (UNAVAILABLE_STATUS.has(status)) return true;
  const reply = err.detail.reply;
  return status >= 500 && typeof reply === "string" && NO_LEADER.test(reply);
}

/**
 * True when `err` means Consul cannot be used now: it could not be reached, or it answered without
 * a leader. Both are "Consul unavailable" for statuses, `/v1/status`, metrics and logs, and a
 * watch read retries both within a second.
 */
export function isUnavailable(err: unknown): boolean {
  return isUnreachable(err) || isLeaderless(err);
}

/**
 * What an answer says about Consul: `servers` (a real answer, the servers took part: Consul
 * works), `agent` (the local agent answered alone, e.g. `/v1/agent/*`: it proves nothing about the
 * servers), `no-leader` (the agent answered that it knows no leader).
 */
export type AnswerKind = "servers" | "agent" | "no-leader";

/** Whether Consul answers, as every call of the one client saw it. */
export interface ConsulReachability {
  /** True until Consul is found unavailable; true again at the next real answer (see createReachabilityTracker). */
  readonly reachable: boolean;
  /** Since when Consul has been unavailable (an ISO time), while it is. */
  readonly lostSince: string | undefined;
  /** Why the last call failed, while Consul is unavailable. */
  readonly reason: string | undefined;
  /** Told on each change (false: lost, true: back). Returns the removal. */
  onChange(listener: (reachable: boolean) => void): () => void;
}

/** The tracker the transport feeds. */
export interface ReachabilityTracker extends ConsulReachability {
  /**
   * Taken when a call is sent and handed back with its outcome: an outcome counts only when its
   * call was sent after the last change (lost or back). Without it, an outcome always counts.
   */
  sent(): number;
  /** A call Consul answered (2xx, or an HTTP error status the transport hands to `failed`). */
  answered(kind?: AnswerKind, sent?: number): void;
  /** A call failed: unreachable, no leader, an HTTP answer (which proves Consul works) or a server error. */
  failed(err: unknown, sent?: number, kind?: Exclude<AnswerKind, "no-leader">): void;
}

/** Reminders while Consul stays unavailable: at most one per this long. */
export const REMINDER_EVERY_MS = 60_000;

/** Server errors (5xx that are not "no leader") in a row, since the last real answer, that make Consul unavailable. */
export const SERVER_ERRORS_IN_A_ROW = 3;

/**
 * The one rule of whether Consul is available, with hysteresis so it never flaps:
 * - Consul is lost on a call that could not reach it, an answer without a leader (HTTP 500 "No
 *   cluster leader", 502/503/504, `/v1/status/leader` answering ""), or
 *   SERVER_ERRORS_IN_A_ROW other server errors with no real answer between them;
 * - it is back only on a real answer: a 2xx or 4xx the servers gave. What the local agent answers
 *   alone (its services, a registration, the leader's address) neither loses nor brings it back;
 * - an outcome counts only when its call was sent after the last change: an old blocking read
 *   that answers late, or a call held across the change that fails late, does not undo it.
 * One warn line when Consul is lost, a reminder at most every minute while it stays lost (only
 * when a call failed again), one info line when it is back; listeners hear both changes.
 */
export function createReachabilityTracker(url: () => string, log?: Logger, clock: Clock = systemClock): ReachabilityTracker {
  let lostAt: number | undefined;
  let lostSince: string | undefined;
  let reason: string | undefined;
  let remindedAt = 0;
  let failures = 0;
  let serverErrors = 0;
  /** Bumped on each change: outcomes of calls sent before it are old news. */
  let epoch = 0;
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
  const current = (sent: number | undefined) => sent === undefined || sent === epoch;
  const back = () => {
    serverErrors = 0;
    if (lostAt === undefined) return;
    const seconds = Math.round((clock.now() - lostAt) / 1000);
    log?.info(`consul: Consul at ${url()} answers again (unavailable for ${seconds} s, ${failures} failed calls); re-reading every watched query`);
    epoch++;
    lostAt = undefined;
    lostSince = undefined;
    reason = undefined;
    failures = 0;
    tell(true);
  };
  const lost = (why: string) => {
    failures++;
    reason = why;
    const now = clock.now();
    if (lostAt === undefined) {
      epoch++;
      lostAt = now;
      lostSince = new Date(clock.wallNow()).toISOString();
      remindedAt = now;
      log?.warn(`consul: lost contact with Consul: ${reason} Tasks keep their last applied state, shown as stale, until Consul is back.`);
      tell(false);
    } else if (now - remindedAt >= REMINDER_EVERY_MS) {
      remindedAt = now;
      log?.warn(`consul: Consul at ${url()} is still unavailable (for ${Math.round((now - lostAt) / 1000)} s, ${failures} failed calls): ${reason}`);
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
    sent: () => epoch,
    answered(kind = "servers", sent) {
      if (!current(sent)) return;
      if (kind === "servers") back();
      else if (kind === "no-leader") lost(`Consul at ${url()} answers, but its servers have no leader (quorum lost or an election in progress).`);
    },
    failed(err, sent, kind = "servers") {
      if (!current(sent)) return;
      if (isUnreachable(err)) return lost((err as CtsError).message);
      if (isLeaderless(err)) return lost((err as CtsError).message);
      const status = err instanceof CtsError ? err.detail.status : undefined;
      if (typeof status !== "number" || kind === "agent") return;
      // Any other answer of the servers: a 4xx proves they work, a 5xx is counted.
      if (status < 500) return back();
      if (++serverErrors >= SERVER_ERRORS_IN_A_ROW) lost(`${(err as CtsError).message} (${serverErrors} server errors in a row)`);
    },
  };
}
