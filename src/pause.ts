import { setTimeout as sleep } from "node:timers/promises";

/**
 * Waits `ms`, or less when `signal` aborts: resolves true after the full wait, false when cut short.
 * The one sleep of cts (on node:timers/promises), so no wait anywhere outlives a stop.
 */
export async function pause(ms: number, signal?: AbortSignal): Promise<boolean> {
  if (signal?.aborted) return false;
  try {
    await sleep(ms, undefined, signal ? { signal } : {});
    return true;
  } catch (err) {
    if ((err as { name?: string }).name === "AbortError") return false;
    throw err;
  }
}

/** Waits for `p`, but at most `ms` (a grace period); never leaves a timer behind. */
export async function atMost(p: Promise<unknown>, ms: number): Promise<void> {
  const stop = new AbortController();
  await Promise.race([p.finally(() => stop.abort()), pause(ms, stop.signal)]);
  stop.abort();
}
