import { systemClock, type Clock } from "./clock.ts";

/**
 * Waits `ms`, or less when `signal` aborts: resolves true after the full wait, false when cut short.
 * The one sleep of cts, so no wait anywhere outlives a stop; on `clock` (a fake one in tests).
 */
export function pause(ms: number, signal?: AbortSignal, clock: Clock = systemClock): Promise<boolean> {
  if (signal?.aborted) return Promise.resolve(false);
  return new Promise<boolean>((resolve) => {
    const stop = () => {
      clock.clearTimeout(timer);
      resolve(false);
    };
    const timer = clock.setTimeout(() => {
      signal?.removeEventListener("abort", stop);
      resolve(true);
    }, ms);
    signal?.addEventListener("abort", stop, { once: true });
  });
}

/** Waits for `p`, but at most `ms` (a grace period, on `clock`); never leaves a timer behind. */
export async function atMost(p: Promise<unknown>, ms: number, clock: Clock = systemClock): Promise<void> {
  const stop = new AbortController();
  await Promise.race([p.finally(() => stop.abort()), pause(ms, stop.signal, clock)]);
  stop.abort();
}
