import { performance } from "node:perf_hooks";
import { backoffDelay } from "../time/backoff.ts";
import { systemClock, type Clock } from "../time/clock.ts";
import { pause } from "../time/pause.ts";

/** What one read of a blocking query answers: at least Consul's X-Consul-Index. */
export interface IndexedAnswer {
  index: bigint;
}

/**
 * What the owner wants after an answer: nothing (block on the new index), or a fresh read from
 * index 0 after a pause (high availability after losing the race for a lock).
 */
export type AfterAnswer = void | { restartAfterMs: number };

/** What a failed read leads to: the loop's backoff (undefined), a wait of this many ms, or the end of the loop. */
export type AfterFailure = number | "stop" | undefined;

/**
 * The owner of one blocking query: it reads at an index and is told each answer at a new index and
 * each failure. An object with methods (a View, an HA watcher), not a set of closures: thousands of
 * views wait at once, and every closure would cost bytes per view.
 */
export interface BlockingQuery<A extends IndexedAnswer> {
  /** One read that blocks while Consul's index is `index` (0: answer at once). */
  read(index: bigint, signal: AbortSignal): Promise<A>;
  /** An answer at a new index (the first one included); an error thrown here counts as a failed read. */
  answered(answer: A): AfterAnswer | Promise<AfterAnswer>;
  /** A failed read (never a cancelled one); `failures` counts consecutive failures from 1. */
  failed(error: unknown, failures: number): AfterFailure;
  /** A read starts (for metrics: an open blocking query when `blocking`). */
  reading?(blocking: boolean): void;
  /** A read ended, answered or failed (a cancelled one too: the owner knows whether it closed). */
  readEnded?(ok: boolean, blocking: boolean, seconds: number): void;
  /**
   * An answer at the index already held (the wait ran out, or Consul woke the read): true when it
   * differs from the data held anyway, and the next read starts over at index 0. Consul wakes the
   * reads of a token whose ACLs changed and answers them at the old index without saying what
   * it filtered; only a full read carries X-Consul-Results-Filtered-By-ACLs.
   */
  sameIndexDiffers?(answer: A): boolean;
  /** The index went back to 0 (Consul's index went backwards, or a read failed). */
  indexReset?(): void;
  /** Consul answered with a lower index than the one held: a restarted agent or a snapshot restore (its data may be gone). */
  indexWentBack?(): void;
}

/** Pacing of the loop. */
export interface BlockingTiming {
  /** Least time between the starts of two reads (CTS: 100 ms) … */
  minIntervalMs: number;
  /** … plus 0 to this much jitter (CTS: 20 ms). */
  jitterMs: number;
  /** First wait after a failed read (doubling per failure, jittered between half and all of it) … */
  backoffBaseMs: number;
  /** … up to this. */
  backoffMaxMs: number;
}

/** CTS's pacing: 100 ms + 0–20 ms between reads; backoff from 250 ms up to 30 s. */
export const CTS_BLOCKING_TIMING: BlockingTiming = Object.freeze({ minIntervalMs: 100, jitterMs: 20, backoffBaseMs: 250, backoffMaxMs: 30_000 });

/**
 * The one blocking-query loop of cts (the watch's views, every high-availability and shared-mode
 * watcher). The first read is at index 0, then each blocks on the last X-Consul-Index:
 * - the same index again: nothing changed (the wait ran out), read again;
 * - an index that went backwards (a restarted agent, a snapshot restore): start over at index 0;
 * - an index of 0 is taken as 1, so the next read still blocks;
 * - a failed read starts over at index 0 after a capped, jittered exponential backoff (or what
 *   `failed` asks for); the loop never gives up unless `failed` says "stop";
 * - at least `minIntervalMs` plus jitter between the starts of two reads.
 * Telling identical data apart is the owner's job: the loop only knows indexes. Ends when `signal`
 * aborts (the read in flight and any wait end with it). Pacing and backoff wait on `clock` (a fake
 * one in tests).
 */
export async function followBlockingQuery<A extends IndexedAnswer>(
  query: BlockingQuery<A>,
  signal: AbortSignal,
  timing: BlockingTiming = CTS_BLOCKING_TIMING,
  random: () => number = Math.random,
  clock: Clock = systemClock,
): Promise<void> {
  let index = 0n;
  /** The index held before a failed read sent the loop back to 0: the first answer after it tells whether Consul went back. */
  let beforeFailure = 0n;
  let failures = 0;
  while (!signal.aborted) {
    const started = clock.now();
    const blocking = index > 0n;
    let delay: number;
    try {
      query.reading?.(blocking);
      const readStarted = performance.now();
      let ok = false;
      let answer: A;
      try {
        answer = await query.read(index, signal);
        ok = true;
      } finally {
        query.readEnded?.(ok, blocking, (performance.now() - readStarted) / 1000);
      }
      if (signal.aborted) break;
      failures = 0;
      let after: AfterAnswer = undefined;
      // A restarted agent answers below what it answered before, also when reads failed in between.
      const wentBack = (index > 0n && answer.index < index) || (index === 0n && beforeFailure > 0n && answer.index < beforeFailure);
      beforeFailure = 0n;
      if (wentBack) query.indexWentBack?.();
      if (index > 0n && answer.index < index) {
        index = 0n;
        query.indexReset?.();
      } else if (index > 0n && answer.index === index) {
        // The wait ran out (or Consul woke up spuriously): nothing changed, ask again — unless the
        // answer differs from the data held (a token's ACLs changed): then a full read.
        if (query.sameIndexDiffers?.(answer)) {
          index = 0n;
          query.indexReset?.();
        }
      } else {
        index = answer.index > 0n ? answer.index : 1n;
        const told = query.answered(answer);
        after = told instanceof Promise ? await told : told;
        if (signal.aborted) break;
      }
      if (after) {
        index = 0n;
        delay = after.restartAfterMs;
      } else delay = timing.minIntervalMs + random() * timing.jitterMs - (clock.now() - started);
    } catch (err) {
      // Only the owner's signal ends the loop: an abort that is not ours (a socket or a library
      // giving up on its own) is a failed read like any other, retried after the backoff.
      if (signal.aborted) break;
      failures++;
      // After any failure, re-read from index 0: the agent may have restarted with a new index.
      if (index > 0n) query.indexReset?.();
      if (index > beforeFailure) beforeFailure = index;
      index = 0n;
      const decision = query.failed(err, failures);
      if (decision === "stop") break;
      delay = decision ?? backoffDelay({ baseMs: timing.backoffBaseMs, maxMs: timing.backoffMaxMs }, failures, random);
    }
    if (delay > 0) await pause(delay, signal, clock);
  }
}
