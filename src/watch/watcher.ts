import { CtsError } from "../errors.ts";
import type { CatalogServicesRequest, ConsulApi, HealthServiceRequest, KvRequest } from "../consul/client.ts";
import { sortInstances, toCatalogServices, toKvPairs, toServiceInstances, withUserMeta } from "../consul/convert.ts";
import { catalogRequestFor, kvRequestFor, matchingNames, normalizeServicesQuery } from "../consul/query.ts";
import { compileCatalogRegexp, filterCatalog } from "../consul/reader.ts";
import type { CatalogServices, CatalogServicesQuery, KvPairs, KvQuery, ServiceInstance, ServicesQuery, Source } from "../consul/types.ts";
import type { Metrics } from "../metrics/metrics.ts";
import { ViewPool, type ViewHandle } from "./pool.ts";
import { DerivedSubscription } from "./subscription.ts";
import type { Subscription, SubscriptionListener, Watcher } from "./types.ts";
import { stableStringify, type ViewFetch, type ViewTiming } from "./view.ts";

export { createCatalogReader } from "../consul/reader.ts";

/** CTS warns above this many watched dependencies. */
const MANY_VIEWS = 128;

/** Options of createWatcher. */
export interface WatcherOptions {
  /** Blocking-loop timing (tests shorten `waitMs` and the backoff). */
  timing?: Partial<ViewTiming>;
  /** Random source for jitter (tests pin it). */
  random?: () => number;
  /** Told once when the number of views passes 128 (CTS logs a warning there too). */
  warn?: (message: string) => void;
  /** Where view fetches, errors, index resets and open blocking queries are counted. */
  metrics?: Metrics;
}

/** A Watcher with introspection for tests and the API. */
export interface ConsulWatcher extends Watcher {
  /** Keys of the open views (normalized queries). */
  viewKeys(): string[];
}

type AnySubscription = DerivedSubscription<Source, unknown>;

/** The Watcher over a ConsulApi: one shared, refcounted view per distinct Consul query. */
export function createWatcher(api: ConsulApi, opts: WatcherOptions = {}): ConsulWatcher {
  let warned = false;
  const pool = new ViewPool({
    ...(opts.timing ? { timing: opts.timing } : {}),
    ...(opts.random ? { random: opts.random } : {}),
    ...(opts.metrics ? { metrics: opts.metrics } : {}),
    onGrow: (count) => {
      if (count > MANY_VIEWS && !warned && opts.warn) {
        warned = true;
        opts.warn(`cts is watching ${count} Consul queries (more than ${MANY_VIEWS}); each is one blocking query on the agent.`);
      }
    },
  });
  const live = new Set<AnySubscription>();
  let closed = false;

  const health = (req: HealthServiceRequest): ViewHandle<ServiceInstance[]> =>
    pool.acquire(`health:${stableStringify(req)}`, (): ViewFetch<ServiceInstance[]> => async ({ index, wait, signal }) => {
      const res = await api.healthService(req, { index, wait, signal });
      return { data: toServiceInstances(res.data), index: res.index };
    });
  const catalog = (req: CatalogServicesRequest): ViewHandle<CatalogServices> =>
    pool.acquire(`catalog:${stableStringify(req)}`, (): ViewFetch<CatalogServices> => async ({ index, wait, signal }) => {
      const res = await api.catalogServices(req, { index, wait, signal });
      return { data: toCatalogServices(res.data), index: res.index };
    });
  const kv = (req: KvRequest): ViewHandle<KvPairs> =>
    pool.acquire(`kv:${stableStringify(req)}`, (): ViewFetch<KvPairs> => async ({ index, wait, signal }) => {
      const res = await api.kv(req, { index, wait, signal });
      return { data: toKvPairs(res.data), index: res.index };
    });

  function subscribeServices(sub: AnySubscription, query: ServicesQuery): void {
    const q = normalizeServicesQuery(query);
    const healthKeys = new Set<string>();
    // Held views that have not answered yet. Before the first data, `combined` answers "not yet"
    // from this set instead of walking every view on every answer: with a regexp matching 10,000
    // services, that walk made start-up quadratic (tens of CPU-seconds).
    const unanswered = new Set<string>();
    const holdHealth = (service: string) => {
      const handle = health({ ...q.health, service });
      const key = handle.view.key;
      healthKeys.add(key);
      if (!handle.view.hasData) unanswered.add(key);
      sub.hold(handle, () => {
        unanswered.delete(key);
        sub.refresh();
      });
    };
    const combined = (ready: boolean): ServiceInstance[] | undefined => {
      if (!ready && unanswered.size > 0) return undefined;
      const lists: ServiceInstance[][] = [];
      for (const key of healthKeys) {
        const view = sub.view<ServiceInstance[]>(key);
        // Before the first answer every view must have spoken; afterwards a just-opened view
        // (a newly matching service) simply contributes nothing until it answers.
        if (!view?.hasData) {
          if (!ready) return undefined;
          continue;
        }
        lists.push(view.data!);
      }
      return withUserMeta(sortInstances(lists.flat()), q.userMeta);
    };

    if (q.names) {
      for (const name of q.names) holdHealth(name);
      sub.derive({ compute: combined, changeKey: stableStringify });
      return;
    }

    // regexp: the shared catalog view decides which health views this subscription holds.
    const regexp = q.regexp!;
    const catalogHandle = catalog(q.catalog);
    const catalogKey = catalogHandle.view.key;
    const keyOf = (service: string) => `health:${stableStringify({ ...q.health, service })}`;
    const syncNames = () => {
      const view = sub.view<CatalogServices>(catalogKey);
      if (!view?.hasData) return;
      const wanted = new Set<string>();
      for (const name of matchingNames(Object.keys(view.data!), regexp)) {
        const key = keyOf(name);
        wanted.add(key);
        if (!healthKeys.has(key)) holdHealth(name);
      }
      for (const key of [...healthKeys]) {
        if (!wanted.has(key)) {
          healthKeys.delete(key);
          unanswered.delete(key);
          sub.drop(key);
        }
      }
    };
    sub.hold(catalogHandle, () => {
      syncNames();
      sub.refresh();
    });
    syncNames();
    sub.derive({
      compute: (ready) => (sub.view<CatalogServices>(catalogKey)?.hasData ? combined(ready) : undefined),
      changeKey: stableStringify,
    });
  }

  function subscribeCatalog(sub: AnySubscription, query: CatalogServicesQuery): void {
    const regexp = compileCatalogRegexp(query.regexp);
    const handle = catalog(catalogRequestFor(query));
    const key = handle.view.key;
    sub.hold(handle);
    sub.derive({
      compute: () => {
        const view = sub.view<CatalogServices>(key);
        return view?.hasData ? filterCatalog(view.data!, regexp) : undefined;
      },
      // As CTS: only a change in the SET of names triggers, not a tag change.
      changeKey: (value: CatalogServices) => JSON.stringify(Object.keys(value).sort()),
    });
  }

  function subscribeKv(sub: AnySubscription, query: KvQuery): void {
    const handle = kv(kvRequestFor(query));
    const key = handle.view.key;
    sub.hold(handle);
    sub.derive({ compute: () => sub.view<KvPairs>(key)?.data, changeKey: stableStringify });
  }

  return {
    subscribe<S extends Source>(source: S, listener: SubscriptionListener): Subscription<S> {
      if (closed) throw new CtsError("WATCHER_CLOSED", "internal", "Cannot subscribe: the watcher was closed. Create a new watcher.");
      const sub: AnySubscription = new DerivedSubscription<Source, unknown>(listener, (s) => live.delete(s));
      live.add(sub);
      try {
        switch (source.kind) {
          case "services":
            subscribeServices(sub, source.query);
            break;
          case "catalog-services":
            subscribeCatalog(sub, source.query);
            break;
          case "consul-kv":
            subscribeKv(sub, source.query);
            break;
          default:
            throw new CtsError("SOURCE_KIND_UNKNOWN", "usage", `Unknown source kind '${(source as { kind: string }).kind}'. Use services, catalog-services or consul-kv.`);
        }
      } catch (err) {
        sub.close();
        throw err;
      }
      return sub as unknown as Subscription<S>;
    },
    viewCount: () => pool.size,
    viewKeys: () => pool.keys(),
    close() {
      closed = true;
      for (const sub of [...live]) sub.close();
      pool.closeAll();
    },
  };
}
