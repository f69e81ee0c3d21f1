import { CtsError } from "../errors/cts-error.ts";
import type { CatalogServicesRequest, ConsulApi, HealthServiceRequest, KvRequest, QueryOptions, QueryResult } from "../consul/client.ts";
import { sortInstances, toCatalogNodes, toCatalogServices, toConfigEntries, toIntentions, toKvPairs, toServiceInstances, withUserMeta } from "../consul/convert.ts";
import { catalogRequestFor, configEntriesRequestFor, intentionsRequestFor, kvRequestFor, matchingNames, nodesRequestFor, normalizeServicesQuery } from "../consul/query.ts";
import { compileCatalogRegexp, filterCatalog } from "../consul/reader.ts";
import type { CatalogServices, CatalogServicesQuery, KvPairs, KvQuery, ServiceInstance, ServicesQuery, Source } from "../consul/types.ts";
import type { Clock } from "../time/clock.ts";
import type { Metrics } from "../metrics/metrics.ts";
import { ViewPool, type ViewHandle } from "./pool.ts";
import { DerivedSubscription } from "./subscription.ts";
import type { Subscription, SubscriptionListener, Watcher } from "./types.ts";
import { canonicalDigest, digestOf, stableStringify } from "./digest.ts";
import type { ViewFetch, ViewTiming } from "./view.ts";

export { createCatalogReader } from "../consul/reader.ts";

/** The digest of a service without instances (it contributes nothing to a combined list). */
const NO_INSTANCES = canonicalDigest([]);

/** CTS warns above this many watched dependencies. */
const MANY_VIEWS = 128;

/** Options of createWatcher. */
export interface WatcherOptions {
  /** Blocking-loop timing (tests shorten `waitMs` and the backoff). */
  timing?: Partial<ViewTiming>;
  /** Random source for jitter (tests pin it). */
  random?: () => number;
  /**
   * Where the watcher's warnings go: once when the number of views passes 128 (CTS logs a warning
   * there too), and each time a full read finds a change a blocking health read was not woken for.
   */
  warn?: (message: string) => void;
  /** Where view fetches, errors, index resets and open blocking queries are counted. */
  metrics?: Metrics;
  /** Time for the views' pauses and backoff (tests pass a fake clock). */
  clock?: Clock;
  /** A view saw Consul's index go backwards: the agent restarted (or a snapshot was restored), and what it kept may be gone. */
  onConsulRestart?: () => void;
}

/** A Watcher with introspection for tests and the API. */
export interface ConsulWatcher extends Watcher {
  /** Keys of the open views (normalized queries). */
  viewKeys(): string[];
  /**
   * Every view ends its read in flight and reads again from index 0: Consul was lost or is back
   * (a read held across a quorum loss may not answer for minutes; a new one answers at once).
   */
  rereadAll(): void;
}

type AnySubscription = DerivedSubscription<Source, unknown>;

/** The Watcher over a ConsulApi: one shared, refcounted view per distinct Consul query. */
export function createWatcher(api: ConsulApi, opts: WatcherOptions = {}): ConsulWatcher {
  let warned = false;
  const pool = new ViewPool({
    ...(opts.timing ? { timing: opts.timing } : {}),
    ...(opts.random ? { random: opts.random } : {}),
    ...(opts.metrics ? { metrics: opts.metrics } : {}),
    ...(opts.clock ? { clock: opts.clock } : {}),
    ...(opts.onConsulRestart ? { onIndexBack: opts.onConsulRestart } : {}),
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
    pool.acquire(`health:${stableStringify(req)}`, (): ViewFetch<ServiceInstance[]> => {
      // The instances of the last answer (the view's own list, not a copy).
      let held: ServiceInstance[] | undefined;
      return async ({ index, wait, signal, sameAs }) => {
        // The raw answer is digested first: Consul wakes a query for writes that leave its answer
        // byte-identical (and re-sends it when its wait ends), which then costs no parse.
        const res = await api.healthService(req, sameAs === undefined ? { index, wait, signal, digestBody: true } : { index, wait, signal, sameAs });
        // The wait ran out at the index held. Consul's streaming view behind blocking health reads
        // was once seen not to wake for a change it already showed elsewhere; one full read (index
        // 0, Consul's RPC path) at each such end bounds a missed change to one wait, and says so.
        if (index > 0n && res.index === index) return fullRead(req, index, held, signal).then((r) => ((held = r.data), r));
        if (res.unchanged) return { index: res.index, unchanged: true as const };
        const data = toServiceInstances(res.data);
        // Consul answers blocking health reads from its streaming backend, which leaves out what a
        // token may not read without saying so (no X-Consul-Results-Filtered-By-ACLs): a token that
        // lost service:read or node:read looks like instances leaving. A blocking answer that lost
        // instances is therefore checked by one full read (index 0, answered by Consul's RPC path,
        // which does say it filtered; the client then fails with the permission error).
        if (index > 0n && held && lostInstances(held, data)) await api.healthService(req, { signal });
        held = data;
        return { data, index: res.index, digest: canonicalDigest(data), ...(res.bodyDigest !== undefined ? { source: res.bodyDigest } : {}) };
      };
    });
  /** One full health read after a blocking wait that ran out; warns when it holds a change the wait missed. */
  async function fullRead(req: HealthServiceRequest, index: bigint, held: ServiceInstance[] | undefined, signal: AbortSignal) {
    const full = await api.healthService(req, { signal });
    const data = toServiceInstances(full.data);
    const digest = canonicalDigest(data);
    if (held && digest !== canonicalDigest(held))
      opts.warn?.(`a blocking read of service ${JSON.stringify(req.service)} was not woken by a change Consul already held; a full read at the end of the wait caught it up (Consul's streaming backend missed the change)`);
    // A lower index than the one held would reset the loop to index 0: keep the higher one.
    return { data, index: full.index > index ? full.index : index, digest };
  }

  const catalog = (req: CatalogServicesRequest): ViewHandle<CatalogServices> =>
    pool.acquire(`catalog:${stableStringify(req)}`, (): ViewFetch<CatalogServices> => async ({ index, wait, signal }) => {
      const res = await api.catalogServices(req, { index, wait, signal });
      const data = toCatalogServices(res.data);
      return { data, index: res.index, digest: canonicalDigest(data) };
    });
  const kv = (req: KvRequest): ViewHandle<KvPairs> =>
    pool.acquire(`kv:${stableStringify(req)}`, (): ViewFetch<KvPairs> => async ({ index, wait, signal }) => {
      const res = await api.kv(req, { index, wait, signal });
      const data = toKvPairs(res.data);
      return { data, index: res.index, digest: canonicalDigest(data) };
    });

  function subscribeServices(sub: AnySubscription, query: ServicesQuery): void {
    const q = normalizeServicesQuery(query);
    const healthKeys = new Set<string>();
    // healthKeys in sorted order, rebuilt only when the set changes (the change key walks it).
    let sortedKeys: string[] | undefined;
    // Held views that have not answered yet. Before the first data, the key answers "not yet"
    // from this set instead of walking every view on every answer: with a regexp matching 10,000
    // services, that walk made start-up quadratic (tens of CPU-seconds).
    const unanswered = new Set<string>();
    // With per-service settings (CTS's service blocks), the user meta of each held view.
    const metaOf = query.each ? new Map<string, Record<string, string>>() : undefined;
    const holdHealth = (request: HealthServiceRequest, userMeta?: Record<string, string>) => {
      const service = request.service;
      const handle = health(request);
      const key = handle.view.key;
      if (metaOf && !metaOf.has(key)) metaOf.set(key, userMeta ?? {});
      healthKeys.add(key);
      sortedKeys = undefined;
      if (!handle.view.hasData && !handle.view.refused) unanswered.add(key);
      sub.hold(
        handle,
        () => {
          unanswered.delete(key);
          sub.refresh();
        },
        // A name Consul cannot serve counts as answered with no instances: the others still run.
        (error) => {
          unanswered.delete(key);
          sub.skipped(service, error);
          sub.refresh();
        },
      );
    };
    const dropHealth = (key: string) => {
      healthKeys.delete(key);
      sortedKeys = undefined;
      unanswered.delete(key);
      sub.drop(key);
    };
    // The combined list is a function of the held views' data, so its change key is a digest of
    // their digests: no copy or serialization of the instances on an answer. Views without data
    // (just opened) and views with no instances contribute nothing, as in value().
    const key = (ready: boolean): string | undefined => {
      if (!ready && unanswered.size > 0) return undefined;
      sortedKeys ??= [...healthKeys].sort();
      let text = "";
      for (const k of sortedKeys) {
        const digest = sub.view<ServiceInstance[]>(k)?.digest;
        if (digest !== undefined && digest !== NO_INSTANCES) text += `${k}\n${digest}\n`;
      }
      return digestOf(text);
    };
    const value = (): ServiceInstance[] => {
      const lists: ServiceInstance[][] = [];
      for (const k of healthKeys) {
        const view = sub.view<ServiceInstance[]>(k);
        if (view?.hasData && view.data!.length > 0) lists.push(metaOf ? withUserMeta(view.data!, metaOf.get(k)) : view.data!);
      }
      if (metaOf) return sortInstances(lists.flat());
      // One service's list is already sorted (toServiceInstances): share it instead of copying.
      const list = lists.length === 1 ? lists[0]! : sortInstances(lists.flat());
      return withUserMeta(list, q.userMeta);
    };

    if (q.names) {
      for (const e of q.entries!) holdHealth(e.request, e.userMeta);
      sub.derive({ key, value });
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
        const k = keyOf(name);
        wanted.add(k);
        if (!healthKeys.has(k)) holdHealth({ ...q.health, service: name });
      }
      for (const k of [...healthKeys]) if (!wanted.has(k)) dropHealth(k);
    };
    sub.hold(catalogHandle, () => {
      syncNames();
      sub.refresh();
    });
    syncNames();
    sub.derive({ key: (ready) => (sub.view<CatalogServices>(catalogKey)?.hasData ? key(ready) : undefined), value });
  }

  function subscribeCatalog(sub: AnySubscription, query: CatalogServicesQuery): void {
    const regexp = compileCatalogRegexp(query.regexp);
    const handle = catalog(catalogRequestFor(query));
    const key = handle.view.key;
    sub.hold(handle);
    const value = () => filterCatalog(sub.view<CatalogServices>(key)!.data!, regexp);
    sub.derive({
      // As CTS: only a change in the SET of names triggers, not a tag change.
      key: () => (sub.view<CatalogServices>(key)?.hasData ? digestOf(JSON.stringify(Object.keys(value()).sort())) : undefined),
      value,
    });
  }

  function subscribeKv(sub: AnySubscription, query: KvQuery): void {
    const handle = kv(kvRequestFor(query));
    const key = handle.view.key;
    sub.hold(handle);
    sub.derive({ key: () => sub.view<KvPairs>(key)?.digest, value: () => sub.view<KvPairs>(key)!.data! });
  }

  /**
   * A source answered by one JSON list (nodes, intentions, config entries): one shared view per
   * distinct request, its data converted by `convert` and compared by digest.
   */
  function subscribeList<R, T>(sub: AnySubscription, prefix: string, req: R, read: (req: R, opts: QueryOptions) => Promise<QueryResult<T[]>>, convert: (raw: T[]) => unknown): void {
    const handle = pool.acquire(`${prefix}:${stableStringify(req)}`, (): ViewFetch<unknown> => async ({ index, wait, signal }) => {
      const res = await read(req, { index, wait, signal });
      const data = convert(res.data);
      return { data, index: res.index, digest: canonicalDigest(data) };
    });
    const key = handle.view.key;
    sub.hold(handle);
    sub.derive({ key: () => sub.view<unknown>(key)?.digest, value: () => sub.view<unknown>(key)!.data! });
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
          case "nodes":
            subscribeList(sub, "nodes", nodesRequestFor(source.query), (r, o) => api.catalogNodes(r, o), toCatalogNodes);
            break;
          case "intentions":
            subscribeList(sub, "intentions", intentionsRequestFor(source.query), (r, o) => api.intentions(r, o), toIntentions);
            break;
          case "config-entries":
            subscribeList(sub, "config", configEntriesRequestFor(source.query), (r, o) => api.configEntries(r, o), toConfigEntries);
            break;
          default:
            throw new CtsError("SOURCE_KIND_UNKNOWN", "usage", `Unknown source kind '${(source as { kind: string }).kind}'. Use services, catalog-services, consul-kv, nodes, intentions or config-entries.`);
        }
      } catch (err) {
        sub.close();
        throw err;
      }
      return sub as unknown as Subscription<S>;
    },
    viewCount: () => pool.size,
    viewKeys: () => pool.keys(),
    rereadAll: () => pool.rereadAll(),
    close() {
      closed = true;
      for (const sub of [...live]) sub.close();
      pool.closeAll();
    },
  };
}

/** True when an instance of `before` (by node and id) is missing from `after`. */
function lostInstances(before: ServiceInstance[], after: ServiceInstance[]): boolean {
  if (after.length < before.length) return true;
  const now = new Set(after.map((i) => `${i.node}\u0000${i.id}`));
  return before.some((i) => !now.has(`${i.node}\u0000${i.id}`));
}
