import type { Source, SourceData } from "../../src/consul/types.ts";
import type { Subscription, SubscriptionListener, Watcher } from "../../src/watch/types.ts";

/** A service instance of 'web' with only its id varying (the shape the catalog reader returns). */
function instance(id: string) {
  return { id, name: "web", kind: "", address: "10.0.0.1", port: 80, meta: {}, tags: [], namespace: "", status: "passing", node: "n", nodeId: "", nodeAddress: "", nodeDatacenter: "", nodeTaggedAddresses: {}, nodeMeta: {}, ctsUserDefinedMeta: {} };
}

/** A watcher (unit tests' stand-in for Consul) whose data the test sets and whose changes it fires. */
export function fakeWatcher() {
  let data: SourceData = [];
  let version = 0;
  const listeners: SubscriptionListener[] = [];
  /** The service names each listener's source watches (to fire only some of them). */
  const names = new Map<SubscriptionListener, readonly string[]>();
  const watcher: Watcher = {
    subscribe<S extends Source>(s: S, l: SubscriptionListener): Subscription<S> {
      listeners.push(l);
      names.set(l, s.kind === "services" ? (s.query.names ?? []) : []);
      return { ready: Promise.resolve(), current: () => data as never, version: () => String(version), close: () => listeners.splice(listeners.indexOf(l), 1) };
    },
    viewCount: () => 1,
    close() {},
  };
  return {
    watcher,
    listeners,
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
