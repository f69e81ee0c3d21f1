import type { CtsError } from "../errors/cts-error.ts";
import type { Source, SourceData } from "../consul/types.ts";
import type { ViewHandle } from "./pool.ts";
import type { View } from "./view.ts";
import type { Subscription, SubscriptionListener } from "./types.ts";

/**
 * How a subscription turns its views' data into the source's data. The key comes from the views'
 * digests, so an answer that changes nothing a subscriber sees costs no copy of the data.
 */
export interface Derivation<T> {
  /**
   * What must differ for subscribers to be told (e.g. only the set of names), or undefined while
   * the data cannot be known yet (`ready` tells whether it was before).
   */
  key(ready: boolean): string | undefined;
  /** The data now; called only once key() has given a key. */
  value(): T;
}

/**
 * A task's hold on one or more shared views, deriving its data from theirs. The first data
 * resolves `ready` (it is not an onChange, unless `ready` had already rejected on a fatal error);
 * afterwards onChange fires only when the change key differs.
 */
export class DerivedSubscription<S extends Source, T = SourceData<S>> implements Subscription<S> {
  readonly ready: Promise<void>;
  private readonly listener: SubscriptionListener;
  private readonly views = new Map<string, { handle: ViewHandle<unknown>; unlisten: () => void }>();
  private derivation: Derivation<T> | undefined;
  /** The data when close() ran: a run still in flight reads what the task last saw. */
  private closedValue: T | undefined;
  private lastKey: string | undefined;
  private isReady = false;
  private rejected = false;
  private isClosed = false;
  private settle!: { resolve: () => void; reject: (err: CtsError) => void };
  private readonly onClose: (sub: DerivedSubscription<S, T>) => void;

  constructor(listener: SubscriptionListener, onClose: (sub: DerivedSubscription<S, T>) => void) {
    this.listener = listener;
    this.onClose = onClose;
    this.ready = new Promise<void>((resolve, reject) => (this.settle = { resolve, reject }));
    // Nobody has to await `ready`: a rejection with no handler must not crash the daemon.
    this.ready.catch(() => {});
  }

  /** Sets how data is derived and computes it once (views may already hold data). */
  derive(derivation: Derivation<T>): void {
    this.derivation = derivation;
    this.refresh();
  }

  /** Whether this subscription holds the view for key. */
  holds(key: string): boolean {
    return this.views.has(key);
  }

  /** Keys of the held views. */
  heldKeys(): string[] {
    return [...this.views.keys()];
  }

  /** The held view for key. */
  view<V>(key: string): View<V> | undefined {
    return this.views.get(key)?.handle.view as View<V> | undefined;
  }

  /**
   * Takes a hold on a view; its new data runs onData (default: recompute), its errors reach the
   * listener. A view Consul refuses runs onRefused (default: a fatal error).
   */
  hold(handle: ViewHandle<unknown>, onData: () => void = () => this.refresh(), onRefused?: (error: CtsError) => void): void {
    if (this.isClosed) return handle.release();
    const key = handle.view.key;
    if (this.views.has(key)) return handle.release();
    // fail.bind, not a named arrow: no own `name` property per held view under tsx (see raw-get.ts).
    const unlisten = handle.view.addListener(onRefused ? { onData, onError: this.fail.bind(this), onRefused } : { onData, onError: this.fail.bind(this) });
    this.views.set(key, { handle, unlisten });
    const refused = handle.view.refused;
    // A view that was refused, or is already failing, tells a newcomer too, once subscribe() has returned.
    if (refused) queueMicrotask(() => this.views.has(key) && (onRefused ? onRefused(refused) : this.fail(refused, true)));
    const failure = handle.view.lastError;
    if (!refused && failure && !handle.view.hasData) queueMicrotask(() => this.views.has(key) && this.fail(failure.error, failure.fatal));
  }

  /** Tells the listener that a service Consul cannot serve was left out of the data. */
  skipped(service: string, error: CtsError): void {
    if (this.isClosed) return;
    try {
      this.listener.onSkipped?.(service, error);
    } catch {
      // A subscriber's bug must not break the shared view's other subscribers.
    }
  }

  /** Lets go of the view for key. */
  drop(key: string): void {
    const held = this.views.get(key);
    if (!held) return;
    this.views.delete(key);
    held.unlisten();
    held.handle.release();
  }

  /** Recomputes the change key; tells the listener when it moved. */
  refresh(): void {
    if (this.isClosed || !this.derivation) return;
    const key = this.derivation.key(this.isReady);
    if (key === undefined) return;
    if (!this.isReady) {
      this.isReady = true;
      this.lastKey = key;
      this.settle.resolve();
      // Whoever saw `ready` reject learns through onChange that the source healed.
      if (!this.rejected) return;
    } else {
      if (key === this.lastKey) return;
      this.lastKey = key;
    }
    try {
      this.listener.onChange();
    } catch {
      // A subscriber's bug must not break the shared view's other subscribers.
    }
  }

  /** Reports a view's failure; a fatal one before the first data rejects `ready`. */
  fail(error: CtsError, fatal: boolean): void {
    if (this.isClosed) return;
    if (fatal && !this.isReady) {
      this.rejected = true;
      this.settle.reject(error);
    }
    try {
      this.listener.onError?.(error, fatal);
    } catch {
      // As above.
    }
  }

  /** Built from the views on each call (once per run), so the subscription keeps no copy of it. */
  current(): SourceData<S> | undefined {
    if (this.isClosed) return this.closedValue as SourceData<S> | undefined;
    if (!this.isReady || !this.derivation) return undefined;
    return this.derivation.value() as SourceData<S>;
  }

  /** The change key of the data current() gives now (a digest of the views' data). */
  version(): string | undefined {
    if (this.isClosed || !this.isReady || !this.derivation) return undefined;
    return this.derivation.key(true);
  }

  close(): void {
    if (this.isClosed) return;
    if (this.isReady && this.derivation) this.closedValue = this.derivation.value();
    this.isClosed = true;
    for (const key of [...this.views.keys()]) this.drop(key);
    this.onClose(this);
  }
}
