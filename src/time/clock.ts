import { performance } from "node:perf_hooks";

/**
 * Time, behind an interface: the parts that wait (buffer periods, the watch loop, run retries, the
 * leader session and state writer, the synthesis worker's idle period, cron schedules, drift
 * checks, Terraform Cloud's polls and retries) take a clock, so their tests run on a fake one
 * (test/support/fake-clock.ts) instead of sleeping.
 */
export interface Clock {
  /** Milliseconds on a clock that never goes backwards; only differences mean anything. */
  now(): number;
  /** Milliseconds since the epoch, as the wall clock shows them: for what is due at a time of day (cron). */
  wallNow(): number;
  /** Calls `fn` once after `ms`; returns the handle clearTimeout takes. */
  setTimeout(fn: () => void, ms: number): unknown;
  /** Cancels a timer set by this clock (a handle already fired or cleared is ignored). */
  clearTimeout(handle: unknown): void;
}

/** The real clock: monotonic time (a wall-clock jump moves no deadline) and Node's timers. */
export const systemClock: Clock = {
  now: () => performance.now(),
  wallNow: () => Date.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
};

/** Lets a timer of the real clock not keep the process alive (a fake clock's handles have no unref). */
export function unrefTimer(handle: unknown): void {
  (handle as { unref?: () => void } | undefined)?.unref?.();
}

/**
 * Calls `fn` every `ms` on `clock` until the returned function stops it; never keeps the process
 * alive. Re-armed after each call (a fake clock fires it as the real one would).
 */
export function every(clock: Clock, ms: number, fn: () => void): () => void {
  let handle: unknown;
  let stopped = false;
  const arm = () => {
    handle = clock.setTimeout(() => {
      if (stopped) return;
      arm();
      fn();
    }, ms);
    unrefTimer(handle);
  };
  arm();
  return () => {
    stopped = true;
    clock.clearTimeout(handle);
  };
}
