import { AROUND_JITTER, backoffDelay, jittered, NO_JITTER } from "../time/backoff.ts";
import { systemClock, type Clock } from "../time/clock.ts";
import type { CtsError } from "../errors/cts-error.ts";
import { pause } from "../time/pause.ts";
import { TERRAFORM_HUNG, TERRAFORM_STATE_LOCKED } from "../terraform/failures.ts";

// The driver's codes for "another Terraform holds this task's state lock" and "a Terraform that
// stopped making progress was killed": defined by the driver, named here for the runtime and HA.
export { TERRAFORM_HUNG, TERRAFORM_STATE_LOCKED };

/** When a failed run is tried again. Every mode (watch, once, inspect, high availability) uses it. */
export interface RetryPolicy {
  /** Retries after a failed apply (CTS: 2); the delay starts at `delayMs` and doubles. */
  retries: number;
  delayMs: number;
  /** How long a locked state is waited for, from the first locked attempt (default 5 min). */
  lockWaitMs: number;
  /** Longest wait between two attempts on a locked state (default 15 s). */
  lockMaxDelayMs: number;
  /** Retries of a hung Terraform (default 1). */
  hungRetries: number;
}

/** CTS's retries, plus waiting out a state lock for 5 minutes and one retry of a hung Terraform. */
export const DEFAULT_RETRY_POLICY: RetryPolicy = { retries: 2, delayMs: 1_000, lockWaitMs: 5 * 60_000, lockMaxDelayMs: 15_000, hungRetries: 1 };

/** What the attempts so far ran into. */
export interface RetryHistory {
  failed: number;
  locked: number;
  hung: number;
  /** When the first locked attempt ended (ms on the runtime's clock). */
  lockedSince?: number;
}

/**
 * The delay before the next attempt, or undefined to give up. `applies` is false for plans and
 * destroys, which retry only a lock or a hang (a failed plan says the same thing twice).
 */
export function nextDelay(policy: RetryPolicy, error: CtsError, history: RetryHistory, applies: boolean, now = systemClock.now()): number | undefined {
  if (error.code === "TERRAFORM_CANCELLED" || error.category === "usage") return undefined;
  if (error.code === TERRAFORM_STATE_LOCKED) {
    history.lockedSince ??= now;
    // The bound is checked against the wait before jitter, so a run never waits past it by chance.
    const delay = backoffDelay({ baseMs: policy.delayMs, maxMs: policy.lockMaxDelayMs, jitter: NO_JITTER }, history.locked + 1);
    if (now + delay - history.lockedSince > policy.lockWaitMs) return undefined;
    history.locked++;
    return Math.round(jittered(delay, AROUND_JITTER));
  }
  if (error.code === TERRAFORM_HUNG) {
    if (history.hung >= policy.hungRetries) return undefined;
    history.hung++;
    return Math.round(jittered(policy.delayMs, AROUND_JITTER));
  }
  if (!applies || history.failed >= policy.retries) return undefined;
  return Math.round(backoffDelay({ baseMs: policy.delayMs, maxMs: Number.POSITIVE_INFINITY, jitter: AROUND_JITTER }, ++history.failed));
}

/**
 * Runs `attempt` until it succeeds or `decide` gives up (undefined), waiting the delay it returns
 * in between (on `clock`). The wait ends early when `signal` aborts; the last error is then thrown at once.
 */
export async function withRetries<T>(
  attempt: () => Promise<T>,
  decide: (err: unknown) => number | undefined,
  signal: AbortSignal,
  onRetry?: (err: unknown, delayMs: number, attempt: number) => void,
  clock: Clock = systemClock,
  /** A fresh signal per wait that ends the wait early and attempts at once (new data arrived). */
  wake?: () => AbortSignal,
): Promise<T> {
  for (let n = 1; ; n++) {
    try {
      return await attempt();
    } catch (err) {
      const delay = signal.aborted ? undefined : decide(err);
      if (delay === undefined) throw err;
      onRetry?.(err, delay, n);
      const woken = wake?.();
      const waited = await pause(delay, woken ? AbortSignal.any([signal, woken]) : signal, clock);
      // Cut short: by a stop (give up), or by new data (attempt now with it).
      if (!waited && signal.aborted) throw err;
    }
  }
}
