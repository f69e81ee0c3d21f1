/**
 * How a wait grows with consecutive failures: `baseMs` after the first, doubling per failure up to
 * `maxMs`, then drawn from a jitter range so that many waiters do not retry in step.
 */
export interface Backoff {
  /** The wait after the first failure (before jitter). */
  baseMs: number;
  /** The longest wait (before jitter). */
  maxMs: number;
  /** The wait is drawn between these fractions of the capped value; default EQUAL_JITTER. */
  jitter?: Jitter;
}

/** A range of fractions `[low, high]` a wait is drawn from. */
export type Jitter = readonly [low: number, high: number];

/** Half fixed, half random: between half and all of the capped wait (the usual "equal jitter"). */
export const EQUAL_JITTER: Jitter = Object.freeze([0.5, 1] as const);
/** 20 % either way around the wait (CTS's retries of a failed run). */
export const AROUND_JITTER: Jitter = Object.freeze([0.8, 1.2] as const);
/** No jitter: the capped wait itself. */
export const NO_JITTER: Jitter = Object.freeze([1, 1] as const);

/** The wait after `failures` consecutive failures (1 = the first): base·2^(failures−1), capped, jittered. */
export function backoffDelay(backoff: Backoff, failures: number, random: () => number = Math.random): number {
  // The exponent is bounded so that a long outage never overflows to Infinity before the cap.
  const capped = Math.min(backoff.maxMs, backoff.baseMs * 2 ** Math.min(Math.max(failures, 1) - 1, 40));
  return jittered(capped, backoff.jitter ?? EQUAL_JITTER, random);
}

/** `ms` scaled by a fraction drawn from `jitter`. */
export function jittered(ms: number, jitter: Jitter, random: () => number = Math.random): number {
  const [low, high] = jitter;
  return ms * (low + random() * (high - low));
}
