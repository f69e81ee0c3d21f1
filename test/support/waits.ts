import { setImmediate as nextTurn } from "node:timers/promises";

/**
 * Waits for what tests wait on instead of sleeping: a fake resolves a promise when the awaited thing
 * happens, or counts it and the test awaits a count. None of these looks at the time.
 */

/** A promise and the functions that settle it. */
export interface Deferred<T> {
  promise: Promise<T>;
  resolve(value: T): void;
  reject(err: unknown): void;
}

/** A promise a fake settles from outside (Node 20 has no Promise.withResolvers). */
export function deferred<T = void>(): Deferred<T> {
  let resolve!: (value: T) => void;
  let reject!: (err: unknown) => void;
  const promise = new Promise<T>((res, rej) => ((resolve = res), (reject = rej)));
  return { promise, resolve, reject };
}

/** A count of something that happened; `reached(n)` resolves once it happened n times. */
export interface Counter {
  readonly value: number;
  /** Counts one more. */
  add(): void;
  /** Resolves when the count is at least `n` (at once if it already is). */
  reached(n: number): Promise<void>;
}

/** A counter starting at 0 (see Counter). */
export function counter(): Counter {
  let value = 0;
  const waiting: Array<{ n: number; resolve: () => void }> = [];
  return {
    get value() {
      return value;
    },
    add() {
      value++;
      for (const w of [...waiting]) {
        if (value < w.n) continue;
        waiting.splice(waiting.indexOf(w), 1);
        w.resolve();
      }
    },
    reached(n) {
      if (value >= n) return Promise.resolve();
      return new Promise((resolve) => waiting.push({ n, resolve }));
    },
  };
}

/**
 * Lets every promise callback already queued run to the end (one turn of the event loop: the
 * microtask queue is drained before it). Not a wait for time: nothing here depends on a timer.
 */
export async function settled(): Promise<void> {
  await nextTurn();
}
