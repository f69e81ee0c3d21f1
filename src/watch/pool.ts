import type { Clock } from "../time/clock.ts";
import type { Metrics } from "../metrics/metrics.ts";
import type { View, ViewFetch, ViewTiming } from "./view.ts";
import { DEFAULT_VIEW_TIMING, View as ViewClass } from "./view.ts";

/** A counted hold on a shared view. */
export interface ViewHandle<T> {
  readonly view: View<T>;
  /** Drops the hold; the view closes when the last hold goes. Idempotent. */
  release(): void;
}

/** Views keyed by their normalized query, refcounted: one blocking loop per distinct query. */
export class ViewPool {
  private readonly entries = new Map<string, { view: View<unknown>; refs: number }>();
  private readonly timing: ViewTiming | undefined;
  private readonly random: (() => number) | undefined;
  private readonly onGrow: ((count: number) => void) | undefined;
  private readonly metrics: Metrics | undefined;
  private readonly clock: Clock | undefined;

  private readonly onIndexBack: (() => void) | undefined;

  constructor(opts: { timing?: Partial<ViewTiming>; random?: () => number; onGrow?: (count: number) => void; metrics?: Metrics; clock?: Clock; onIndexBack?: () => void } = {}) {
    // Completed once here, so every view shares one timing object.
    this.timing = opts.timing ? { ...DEFAULT_VIEW_TIMING, ...opts.timing } : undefined;
    this.metrics = opts.metrics;
    this.random = opts.random;
    this.onGrow = opts.onGrow;
    this.clock = opts.clock;
    this.onIndexBack = opts.onIndexBack;
  }

  /** Number of open views. */
  get size(): number {
    return this.entries.size;
  }

  /** Keys of the open views. */
  keys(): string[] {
    return [...this.entries.keys()].sort();
  }

  /** Every open view ends its read in flight and reads again from index 0 (View.reread). */
  rereadAll(): void {
    for (const { view } of this.entries.values()) view.reread();
  }

  /** Holds the view for key, opening (and starting) it with fetch when it is not open yet. */
  acquire<T>(key: string, fetch: () => ViewFetch<T>): ViewHandle<T> {
    let entry = this.entries.get(key);
    if (!entry) {
      const view = new ViewClass<T>(key, fetch(), {
        ...(this.timing ? { timing: this.timing } : {}),
        ...(this.random ? { random: this.random } : {}),
        ...(this.metrics ? { metrics: this.metrics } : {}),
        ...(this.clock ? { clock: this.clock } : {}),
        ...(this.onIndexBack ? { onIndexBack: this.onIndexBack } : {}),
      });
      entry = { view: view as View<unknown>, refs: 0 };
      this.entries.set(key, entry);
      view.start();
      this.onGrow?.(this.entries.size);
    }
    entry.refs++;
    const held = entry;
    const entries = this.entries;
    let released = false;
    return {
      view: held.view as View<T>,
      // A method, not a named arrow: no own `name` property per handle under tsx (see raw-get.ts).
      release() {
        if (released) return;
        released = true;
        held.refs--;
        if (held.refs === 0 && entries.get(key) === held) {
          entries.delete(key);
          held.view.close();
        }
      },
    };
  }

  /** Closes every view. */
  closeAll(): void {
    for (const { view } of this.entries.values()) view.close();
    this.entries.clear();
  }
}
