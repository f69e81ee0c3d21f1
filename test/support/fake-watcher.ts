import type { Source, SourceData } from "../../src/consul/types.ts";
import type { Subscription, SubscriptionListener, Watcher } from "../../src/watch/types.ts";

/** A service instance of 'web' with only its id varying (the shape the catalog reader returns). */
function instance(id: string) {
  return { id, name: "web", kind: "", address: "10.0.0.1", port: 80, meta: {}, tags: [], namespace: "", status: "passing", node: "n", nodeId: "", nodeAddress: "", nodeDatacenter: "", nodeTaggedAddresses: {}, nodeMeta: {}, ctsUserDefinedMeta: {} };
}

/** A watcher (unit tests' stand-in for Consul) whose data the test sets and whose changes it fires. */
export function fakeWatcher(opts: { pending?: string } = {}) {
  let data: SourceData = [];
  let version = 0;
  const listeners: SubscriptionListener[] = [];
  /** The service names each listener's source watches (to fire only some of them). */
  const names = new Map<SubscriptionListener, readonly string[]>();
  // Sources of the service `opts.pending` have no data (ready pending, no key) until `answer()`.
  let answered = opts.pending === undefined;
  let answer!: () => void;
  const firstAnswer = new Promise<void>((r) => (answer = r));
  const watcher: Watcher = {
    subscribe<S extends Source>(s: S, l: SubscriptionListener): Subscription<S> {
      listeners.push(l);
      const watched = s.kind === "services" ? (s.query.names ?? []) : [];
      names.set(l, watched);
      const late = opts.pending !== undefined && watched.includes(opts.pending);
      return {
        ready: late ? firstAnswer : Promise.resolve(),
        current: () => (late && !answered ? undefined : (data as never)),
        version: () => (late && !answered ? undefined : String(version)),
        close: () => listeners.splice(listeners.indexOf(l), 1),
      };
    },
    viewCount: () => 1,
    close() {},
  };
  return {
    watcher,
    listeners,
    /** The first answer for the sources of `opts.pending`. */
    answer() {
      answered = true;
      answer();
    },
    /** Open subscriptions (each a blocking query in a real watcher). */
    open: () => listeners.length,
    /**
     * Sets the instances every source reads (by id) and, unless `fire` is false, tells every
     * subscriber (with `only`, those whose source watches that service name).
     */
    set(ids: Array<string | { id: string }>, fire = true, only?: string) {
      data = ids.map((i) => instance(typeof i === "string" ? i : i.id)) as SourceData;
      version++;
      if (fire) for (const l of [...listeners]) if (only === undefined || names.get(l)?.includes(only)) l.onChange();
    },
  };
}
