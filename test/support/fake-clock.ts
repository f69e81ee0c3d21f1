import type { Clock } from "../../src/time/clock.ts";
import { settled } from "./waits.ts";

/** A clock that only moves when the test moves it: timers fire in due order, time jumps to each. */
export interface FakeClock extends Clock {
  /** Moves time forward by `ms`, firing every timer that falls due on the way (synchronously). */
  advance(ms: number): void;
  /** Moves time forward by `ms` firing nothing: a stalled process (SIGSTOP, a VM pause), whose overdue timers then fire late. */
  stall(ms: number): void;
  /** Timers set and not yet fired or cleared. */
  pending(): number;
  /** Moves time to the earliest timer and fires it; false when no timer is set. */
  fireNext(): boolean;
  /**
   * Lets promise callbacks settle, then fires the earliest timer, and again, until `done()` holds.
   * Fails (instead of hanging) when nothing is left to fire, or after `maxTimers` timers: code
   * that never gets there is stuck, not slow.
   */
  runUntil(done: () => boolean, what?: string, maxTimers?: number): Promise<void>;
}

/**
 * A fake clock starting at 0 (see FakeClock); its wall time starts at `wallStart`. With `autoAdvance`, time jumps to the next timer by
 * itself whenever the code under test has nothing else to do (after a turn of the event loop), so a
 * test can simply await the outcome: retries and backoffs take no real time, and every delay
 * is exact. Only for code whose timers end (a periodic timer would spin).
 */
export function fakeClock(opts: { autoAdvance?: boolean; wallStart?: number } = {}): FakeClock {
  let now = 0;
  let nextId = 1;
  const timers = new Map<number, { at: number; fn: () => void }>();
  let stepping = false;
  const step = () => {
    if (stepping || !opts.autoAdvance) return;
    stepping = true;
    void settled().then(() => {
      stepping = false;
      if (clock.fireNext()) step();
    });
  };
  const earliest = () => {
    let first: [number, { at: number; fn: () => void }] | undefined;
    // Map order is the order timers were set: equal due times fire in that order.
    for (const entry of timers) if (!first || entry[1].at < first[1].at) first = entry;
    return first;
  };
  const fire = ([id, t]: [number, { at: number; fn: () => void }]) => {
    timers.delete(id);
    now = Math.max(now, t.at);
    t.fn();
  };
  const clock: FakeClock = {
    now: () => now,
    // The wall clock moves with the fake time, from `wallStart` (default 2026-01-01T00:00:00Z).
    wallNow: () => (opts.wallStart ?? Date.UTC(2026, 0, 1)) + now,
    setTimeout(fn, ms) {
      const id = nextId++;
      timers.set(id, { at: now + Math.max(0, ms), fn });
      step();
      return id;
    },
    clearTimeout: (id) => void timers.delete(id as number),
    advance(ms) {
      const end = now + ms;
      for (let due = earliest(); due && due[1].at <= end; due = earliest()) fire(due);
      now = end;
    },
    stall(ms) {
      now += ms;
    },
    pending: () => timers.size,
    fireNext() {
      const due = earliest();
      if (!due) return false;
      fire(due);
      return true;
    },
    async runUntil(done, what = "the condition", maxTimers = 10_000) {
      for (let fired = 0; ; fired++) {
        await settled();
        if (done()) return;
        if (fired >= maxTimers) throw new Error(`${what} still not met after ${maxTimers} timers (at ${now} ms on the fake clock)`);
        if (!clock.fireNext()) throw new Error(`${what} not met and no timer left to fire (at ${now} ms on the fake clock): the code under test is stuck`);
      }
    },
  };
  return clock;
}
