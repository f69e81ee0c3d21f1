import { backoffDelay, jittered, type Jitter } from "../time/backoff.ts";
import { isUnavailable } from "../consul/reachability.ts";
import { systemClock, type Clock } from "../time/clock.ts";
import { CtsError, toCtsError } from "../errors/cts-error.ts";
import { isAbortError, isFatalConsulError, isRefusedServiceName } from "../consul/api-error.ts";
import { CTS_BLOCKING_TIMING, followBlockingQuery, type AfterFailure, type BlockingQuery, type BlockingTiming } from "../consul/blocking-query.ts";
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

/** Timing of a view's blocking loop (the loop's pacing, CTS_BLOCKING_TIMING, and more). Defaults match CTS; tests shorten them. */
export interface ViewTiming extends BlockingTiming {
  /** Consul's blocking wait (default 5 min). */
  waitMs: number;
  /** Retry delay after a fatal (4xx) error: slow, so a fixed ACL heals without a restart (default 30 s). */
  fatalRetryMs: number;
  /** Cap of the backoff while Consul is unavailable (unreachable, or no leader; default 1 s): a returning Consul is read again at once. */
  unreachableMaxMs: number;
}

/** CTS's timing. */
export const DEFAULT_VIEW_TIMING: ViewTiming = Object.freeze({ ...CTS_BLOCKING_TIMING, waitMs: DEFAULT_WAIT_MS, fatalRetryMs: 30_000, unreachableMaxMs: 1_000 });

/** A fatal error's retry delay is jittered down by at most a quarter. */
const FATAL_JITTER: Jitter = Object.freeze([0.75, 1] as const);

/**
 * One distinct query, followed by the one blocking-query loop (followBlockingQuery: index 0 first,
 * then the last X-Consul-Index, resets, backoff); tells listeners only about data that differs from
 * the last. Gives up only when Consul refuses the query itself (`refused`); close() aborts the
 * in-flight request and every timer.
 */
export class View<T> implements BlockingQuery<ViewAnswer<T>> {
  readonly key: string;
  private readonly fetch: ViewFetch<T>;
  private readonly timing: ViewTiming;
  private readonly random: () => number;
  private readonly clock: Clock;
  private readonly listeners = new Set<ViewListener<T>>();
  private readonly controller = new AbortController();
  private latest: { data: T; digest: string; source: string | undefined } | undefined;
  private failure: { error: CtsError; fatal: boolean } | undefined;
  private refusal: CtsError | undefined;
  private loop: Promise<void> | undefined;
  private fetches = 0;
  private readonly metrics: Metrics;
  private readonly kind: string;

  private readonly wentBack: (() => void) | undefined;
  /** Cuts the read in flight short (reread), with the loop's signal; made anew after each cut. */
  private cut: { controller: AbortController; signal: AbortSignal } | undefined;
  private inFlight = false;
  private wasCut = false;

  constructor(
    key: string,
    fetch: ViewFetch<T>,
    opts: { timing?: Partial<ViewTiming>; random?: () => number; metrics?: Metrics; clock?: Clock; /** Consul's index went backwards (a restart). */ onIndexBack?: () => void } = {},
  ) {
    this.key = key;
    this.metrics = opts.metrics ?? noMetrics;
    this.kind = viewKind(key);
    this.fetch = fetch;
    // No timing (the daemon's case): share the defaults instead of a copy per view.
    this.timing = !opts.timing ? DEFAULT_VIEW_TIMING : isComplete(opts.timing) ? opts.timing : { ...DEFAULT_VIEW_TIMING, ...opts.timing };
    this.random = opts.random ?? Math.random;
    this.clock = opts.clock ?? systemClock;
    this.wentBack = opts.onIndexBack;
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
    this.loop = followBlockingQuery(this, this.controller.signal, this.timing, this.random, this.clock);
  }

  /** Stops the loop: aborts the in-flight request and clears timers. */
  close(): void {
    this.listeners.clear();
    this.controller.abort();
  }

  /**
   * Ends the read in flight and reads again from index 0 at once (no-op while none is in flight:
   * the next read is due within a second). Consul was lost or is back: a blocking read sent before
   * may be held by a server that lost its leader until its wait ends (minutes), while a new one
   * answers as soon as Consul can.
   */
  reread(): void {
    if (this.closed || !this.inFlight || !this.cut) return;
    this.wasCut = true;
    this.cut.controller.abort();
    this.cut = undefined;
  }

  /** Resolves when the loop has ended (after close()). */
  async done(): Promise<void> {
    await this.loop;
  }

  // ---- the loop's owner (followBlockingQuery calls these) ---------------------------------------

  /** One fetch at `index`; the last accepted raw answer goes along as `sameAs`. */
  read(index: bigint, loop: AbortSignal): Promise<ViewAnswer<T>> {
    this.fetches++;
    this.inFlight = true;
    if (!this.cut) {
      const controller = new AbortController();
      this.cut = { controller, signal: AbortSignal.any([loop, controller.signal]) };
    }
    const { signal } = this.cut;
    const sameAs = this.latest?.source;
    return this.fetch(sameAs === undefined ? { index, wait: this.timing.waitMs, signal } : { index, wait: this.timing.waitMs, signal, sameAs });
  }

  /** An answer at a new index: new data is kept and told (an `unchanged` answer keeps the data). */
  answered(res: ViewAnswer<T>): void {
    this.wasCut = false;
    this.failure = undefined;
    if (!("unchanged" in res)) this.accept(res.data, res.digest, res.source);
  }

  /** A failed fetch: told to the listeners; a refused query ends the loop, a fatal error retries slowly. */
  failed(err: unknown, failures = 1): AfterFailure {
    // The read this view cut short (reread): no failure, read again from index 0 now.
    if (this.wasCut) {
      this.wasCut = false;
      if (isAbortError(err)) return 0;
    }
    const error = err instanceof CtsError ? err : toCtsError(err, "CONSUL_WATCH_FAILED");
    if (isRefusedServiceName(error)) {
      // The same question gets the same 400 forever: no retry, and no query left open.
      this.refusal = error;
      this.emitRefused(error);
      return "stop";
    }
    const fatal = isFatalConsulError(error);
    this.failure = { error, fatal };
    this.emitError(error, fatal);
    if (fatal) return jittered(this.timing.fatalRetryMs, FATAL_JITTER, this.random);
    // A refused connection costs Consul nothing, and a server without a leader holds each read
    // (rpc_hold_timeout, 7 s) before it says so: the read is tried again within a second, so the
    // first answer after an outage or a quorum loss comes at most that long after Consul is back.
    if (isUnavailable(error)) return backoffDelay({ baseMs: this.timing.backoffBaseMs, maxMs: Math.min(this.timing.unreachableMaxMs, this.timing.backoffMaxMs) }, failures, this.random);
    return undefined;
  }

  /** An answer at the held index that differs from the held data (see BlockingQuery.sameIndexDiffers). */
  sameIndexDiffers(res: ViewAnswer<T>): boolean {
    if ("unchanged" in res || !this.latest) return false;
    if (res.source !== undefined && res.source === this.latest.source) return false;
    return (res.digest ?? stableDigest(res.data)) !== this.latest.digest;
  }

  /** Counted as an open blocking query while it waits. */
  reading(blocking: boolean): void {
    if (blocking) this.metrics.blockingQuery(this.kind, 1);
  }

  /** A fetch ended (a cancelled one is not a fetch). */
  readEnded(ok: boolean, blocking: boolean, seconds: number): void {
    this.inFlight = false;
    if (blocking) this.metrics.blockingQuery(this.kind, -1);
    if (!this.closed) this.metrics.viewFetched(this.kind, { ok, blocking, seconds });
  }

  /** Consul's index went backwards or a fetch failed: the next fetch is a full read. */
  indexReset(): void {
    this.metrics.viewIndexReset(this.kind);
  }

  /** Consul answered below the index held: a restarted agent (or a snapshot restore), whose KV may be empty now. */
  indexWentBack(): void {
    this.wentBack?.();
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

