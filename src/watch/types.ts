import type { CtsError } from "../errors/cts-error.ts";
import type { SkippedServiceListener, Source, SourceData } from "../consul/types.ts";

/** A task's hold on the shared view(s) behind one source. */
export interface Subscription<S extends Source = Source> {
  /** Resolves once the source has data (its first fetch answered), rejects on a configuration error. */
  readonly ready: Promise<void>;
  /** The latest data, or undefined before the first answer. */
  current(): SourceData<S> | undefined;
  /** The change key of the data current() gives (a different key is a change listeners are told of), or undefined before the first answer. */
  version?(): string | undefined;
  /** Stops listening; the view stops when its last subscriber leaves. */
  close(): void;
}

/** What a subscriber is told. */
export interface SubscriptionListener {
  /** The source's data changed (never called for identical data). */
  onChange(): void;
  /** A fetch failed. `fatal` errors (4xx other than 429) are configuration errors. */
  onError?(error: CtsError, fatal: boolean): void;
  /** A service Consul cannot serve (see `refusedServiceName`) was left out of the data. */
  onSkipped?: SkippedServiceListener;
}

/**
 * Watches Consul with blocking queries. One view per distinct query, shared by every subscriber:
 * 100 tasks on service `web` make one query.
 */
export interface Watcher {
  /** Subscribes to a source. */
  subscribe<S extends Source>(source: S, listener: SubscriptionListener): Subscription<S>;
  /** Number of views (distinct blocking queries) currently open. */
  viewCount(): number;
  /** Stops every view. */
  close(): void;
}
