import { pause } from "../pause.ts";
import { CtsError, toCtsError } from "../errors.ts";
import { isAbortError, isFatalConsulError, isRefusedServiceName } from "../consul/api-error.ts";
import { DEFAULT_WAIT_MS } from "../consul/client.ts";
import { noMetrics, viewKind, type Metrics } from "../metrics/metrics.ts";
import { stableDigest, stableStringify } from "./digest.ts";

export { stableStringify };

/**
 * One fetch of a view: a (converted) answer and the index to block on next. `digest` identifies
 * the data (equal data, equal digest); without it the view digests the data with sorted keys.
 * `source` identifies the raw answer it came from: the next fetch gets it as `sameAs` and may
 * answer `unchanged` (same raw answer, so same data) without parsing anything.
 */
export type ViewFetch<T> = (opts: { index: bigint; wait: number; signal: AbortSignal; sameAs?: string }) => Promise<ViewAnswer<T>>;

/** What one fetch answers. */
export type ViewAnswer<T> = { data: T; index: bigint; digest?: string; source?: string } | { index: bigint; unchanged: true };

/** What a view tells the things built on it. */
export interface ViewListener<T> {
  /** New data, different from the last (never called for identical data). */
  onData(data: T): void;
  /** A failed fetch; `fatal` when retrying will not help without a config/ACL change. */
  onError(error: CtsError, fatal: boolean): void;
  /**
   * Consul cannot serve this query at all (a service name its HTTP API refuses): the view has
   * stopped asking. Without this method, the listener hears it as a fatal error.
   */
  onRefused?(error: CtsError): void;
}

/** Timing of the blocking loop. Defaults match CTS; tests shorten them. */
export interface ViewTiming {
  /** Consul's blocking wait (default 5 min). */
  waitMs: number;
  /** Least time between two fetches of one view (default 100 ms) … */
  minIntervalMs: number;
  /** … plus 0 to this much jitter (default 20 ms). */
  jitterMs: number;
  /** First retry delay after an error (default 250 ms), doubling per failure … */
  backoffBaseMs: number;
  /** … up to this (default 30 s). */
  backoffMaxMs: number;
  /** Retry delay after a fatal (4xx) error: slow, so a fixed ACL heals without a restart (default 30 s). */
  fatalRetryMs: number;
}

/** CTS's timing. */
export const DEFAULT_VIEW_TIMING: ViewTiming = Object.freeze({
  waitMs: DEFAULT_WAIT_MS,
  minIntervalMs: 100,
  jitterMs: 20,
  backoffBaseMs: 250,
  backoffMaxMs: 30_000,
  fatalRetryMs: 30_000,
});

/**
 * One blocking-query loop for one distinct query. Starts at index 0, then blocks on the last
 * X-Consul-Index; tells listeners only about data that differs from the last. Gives up only when
 * Consul refuses the query itself (`refused`); close() aborts the in-flight request and every timer.
 */
export class View<T> {
  readonly key: string;
  private readonly fetch: ViewFetch<T>;
  private readonly timing: ViewTiming;
  private readonly random: () => number;
  private readonly listeners = new Set<ViewListener<T>>();
  private readonly controller = new AbortController();
  private latest: { data: T; digest: string; source: string | undefined } | undefined;
  private failure: { error: CtsError; fatal: boolean } | undefined;
  private refusal: CtsError | undefined;
  private loop: Promise<void> | undefined;
  private fetches = 0;
  private readonly metrics: Metrics;
  private readonly kind: string;

  constructor(key: string, fetch: ViewFetch<T>, opts: { timing?: Partial<ViewTiming>; random?: () => number; metrics?: Metrics } = {}) {
    this.key = key;
    this.metrics = opts.metrics ?? noMetrics;
    this.kind = viewKind(key);
    this.fetch = fetch;
    // No timing (the daemon's case): share the defaults instead of a copy per view.
    this.timing = !opts.timing ? DEFAULT_VIEW_TIMING : isComplete(opts.timing) ? opts.timing : { ...DEFAULT_VIEW_TIMING, ...opts.timing };
    this.random = opts.random ?? Math.random;
  }

  /** The latest data, or undefined before the first answer. */
  get data(): T | undefined {
    return this.latest?.data;
  }

  /** Identifies the latest data (equal data, equal digest); undefined before the first answer. */
  get digest(): string | undefined {
    return this.latest?.digest;
  }

  /** True once a fetch has answered. */
  get hasData(): boolean {
    return this.latest !== undefined;
  }

  /** The last failure, cleared by the next successful fetch. */
  get lastError(): { error: CtsError; fatal: boolean } | undefined {
    return this.failure;
  }

  /** Why Consul cannot serve this query, once it refused it; the view asks no more then. */
  get refused(): CtsError | undefined {
    return this.refusal;
  }

  /** How many fetches were made (for tests and metrics). */
  get fetchCount(): number {
    return this.fetches;
  }

  /** True after close(). */
  get closed(): boolean {
    return this.controller.signal.aborted;
  }

  /** Adds a listener; returns its removal. */
  addListener(listener: ViewListener<T>): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Starts the loop (once). */
  start(): void {
    if (this.loop || this.closed) return;
    this.loop = this.run();
  }

  /** Stops the loop: aborts the in-flight request and clears timers. */
  close(): void {
    this.listeners.clear();
    this.controller.abort();
  }

  /** Resolves when the loop has ended (after close()). */
  async done(): Promise<void> {
    await this.loop;
  }

  private async run(): Promise<void> {
    const signal = this.controller.signal;
    let index = 0n;
    let failures = 0;
    while (!signal.aborted) {
      const started = Date.now();
      const blocking = index > 0n;
      let delay: number;
      try {
        this.fetches++;
        // Counted as an open blocking query while it waits (a cancelled one is not a fetch).
        const fetchStarted = performance.now();
        if (blocking) this.metrics.blockingQuery(this.kind, 1);
        let ok = false;
        let res: ViewAnswer<T>;
        try {
          const sameAs = this.latest?.source;
          res = await this.fetch(sameAs === undefined ? { index, wait: this.timing.waitMs, signal } : { index, wait: this.timing.waitMs, signal, sameAs });
          ok = true;
        } finally {
          if (blocking) this.metrics.blockingQuery(this.kind, -1);
          if (!this.closed) this.metrics.viewFetched(this.kind, { ok, blocking, seconds: (performance.now() - fetchStarted) / 1000 });
        }
        if (signal.aborted) break;
        failures = 0;
        this.failure = undefined;
        if (index > 0n && res.index < index) {
          // Consul's index went backwards (restart, snapshot restore): start over from a full read.
          index = 0n;
          this.metrics.viewIndexReset(this.kind);
        } else if (index > 0n && res.index === index) {
          // The wait ran out (or Consul woke up spuriously): nothing changed, ask again.
        } else {
          // An index of 0 would make the next query return at once, forever; Consul says use 1.
          index = res.index > 0n ? res.index : 1n;
          if (!("unchanged" in res)) this.accept(res.data, res.digest, res.source);
        }
        delay = this.timing.minIntervalMs + this.random() * this.timing.jitterMs - (Date.now() - started);
      } catch (err) {
        if (signal.aborted || isAbortError(err)) break;
        failures++;
        // After any failure, re-read from index 0: the agent may have restarted with a new index.
        if (index > 0n) this.metrics.viewIndexReset(this.kind);
        index = 0n;
        const error = err instanceof CtsError ? err : toCtsError(err, "CONSUL_WATCH_FAILED");
        if (isRefusedServiceName(error)) {
          // The same question gets the same 400 forever: no retry, and no query left open.
          this.refusal = error;
          this.emitRefused(error);
          break;
        }
        const fatal = isFatalConsulError(error);
        this.failure = { error, fatal };
        this.emitError(error, fatal);
        delay = fatal ? this.timing.fatalRetryMs * (0.75 + this.random() * 0.25) : this.backoff(failures);
      }
      if (delay > 0) await sleep(delay, signal);
    }
  }

  /** Exponential backoff with jitter: between half and all of base·2^(n-1), capped. */
  private backoff(failures: number): number {
    const full = Math.min(this.timing.backoffMaxMs, this.timing.backoffBaseMs * 2 ** Math.min(failures - 1, 20));
    return full / 2 + (this.random() * full) / 2;
  }

  private accept(data: T, given: string | undefined, source: string | undefined): void {
    const digest = given ?? stableDigest(data);
    if (this.latest && this.latest.digest === digest) {
      this.latest.source = source;
      return;
    }
    this.latest = { data, digest, source };
    for (const l of [...this.listeners]) {
      try {
        l.onData(data);
      } catch {
        // A listener's bug must not stop the watch for everyone else.
      }
    }
  }

  private emitRefused(error: CtsError): void {
    for (const l of [...this.listeners]) {
      try {
        if (l.onRefused) l.onRefused(error);
        else l.onError(error, true);
      } catch {
        // As above.
      }
    }
  }

  private emitError(error: CtsError, fatal: boolean): void {
    for (const l of [...this.listeners]) {
      try {
        l.onError(error, fatal);
      } catch {
        // As above.
      }
    }
  }
}

function isComplete(t: Partial<ViewTiming>): t is ViewTiming {
  return (Object.keys(DEFAULT_VIEW_TIMING) as (keyof ViewTiming)[]).every((k) => t[k] !== undefined);
}

/** Waits ms, or less when the signal aborts; never leaves a timer behind. */
export async function sleep(ms: number, signal: AbortSignal): Promise<void> {
  await pause(ms, signal);
}
