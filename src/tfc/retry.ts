import { backoffDelay } from "../time/backoff.ts";

/** How the client retries (every wait is bounded; tests shorten them). */
export interface RetryPolicy {
  /** Attempts in all for 5xx answers and network failures of calls that are safe to repeat. */
  attempts: number;
  /** First backoff; doubles per attempt, capped at maxDelayMs, with jitter. */
  baseDelayMs: number;
  maxDelayMs: number;
  /** Attempts in all for 429 answers (any call: a rate-limited request was not processed). */
  rateLimitAttempts: number;
  /** The longest single wait a 429 may ask for; a longer X-RateLimit-Reset is cut to this. */
  maxRateLimitWaitMs: number;
}

/** Defaults: 4 tries with 0.25 s → 2 s backoff; up to 6 tries on 429, waiting at most 60 s each. */
export const DEFAULT_RETRY: RetryPolicy = { attempts: 4, baseDelayMs: 250, maxDelayMs: 5_000, rateLimitAttempts: 6, maxRateLimitWaitMs: 60_000 };

/** Capped exponential backoff with jitter (half fixed, half random) for attempt `n` (1 = first retry). */
export function backoffMs(policy: RetryPolicy, n: number, random: () => number = Math.random): number {
  return Math.round(backoffDelay({ baseMs: policy.baseDelayMs, maxMs: policy.maxDelayMs }, n, random));
}

/**
 * How long a 429 asks to wait. TFC sends `X-RateLimit-Reset` as seconds until the window resets
 * (a float, as go-tfe reads it); a value that looks like a Unix time is read as one; `Retry-After`
 * (seconds) is the fallback, then the backoff. Never longer than maxRateLimitWaitMs. `now` is the
 * wall time (ms since the epoch) on the client's clock.
 */
export function rateLimitWaitMs(policy: RetryPolicy, n: number, headers: Record<string, string | string[] | undefined>, now: number): number {
  const header = (name: string) => {
    const v = headers[name];
    return Number.parseFloat(Array.isArray(v) ? (v[0] ?? "") : (v ?? ""));
  };
  let wait = Number.NaN;
  const reset = header("x-ratelimit-reset");
  if (Number.isFinite(reset) && reset > 0) wait = reset > 1e9 ? reset * 1000 - now : reset * 1000;
  const retryAfter = header("retry-after");
  if (!(wait > 0) && Number.isFinite(retryAfter) && retryAfter > 0) wait = retryAfter * 1000;
  if (!(wait > 0)) wait = backoffMs(policy, n);
  return Math.min(policy.maxRateLimitWaitMs, Math.ceil(wait));
}
