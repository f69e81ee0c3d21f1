import { isRefusedServiceName } from "./api-error.ts";
import type { ConsulApi } from "./client.ts";
import { sortInstances, toCatalogNodes, toCatalogServices, toConfigEntries, toIntentions, toKvPairs, toServiceInstances } from "./convert.ts";
import { catalogRequestFor, compileRegexp, configEntriesRequestFor, intentionsRequestFor, kvRequestFor, matchingNames, nodesRequestFor, normalizeServicesQuery } from "./query.ts";
import type { CatalogReader, ServiceInstance, ServicesQuery, SkippedServiceListener, Source, SourceData } from "./types.ts";

/** A CatalogReader over a ConsulApi: one non-blocking read per request (for synth, once, inspect). */
export function createCatalogReader(api: ConsulApi): CatalogReader {
  return {
    async read<S extends Source>(source: S, signal?: AbortSignal, onSkipped?: SkippedServiceListener): Promise<SourceData<S>> {
      const opts = signal ? { signal } : {};
      switch (source.kind) {
        case "services":
          return (await readServices(api, source.query, signal, onSkipped)) as SourceData<S>;
        case "catalog-services": {
          const regexp = compileCatalogRegexp(source.query.regexp);
          const { data } = await api.catalogServices(catalogRequestFor(source.query), opts);
          return filterCatalog(toCatalogServices(data), regexp) as SourceData<S>;
        }
        case "consul-kv": {
          const { data } = await api.kv(kvRequestFor(source.query), opts);
          return toKvPairs(data) as SourceData<S>;
        }
        case "nodes": {
          const { data } = await api.catalogNodes(nodesRequestFor(source.query), opts);
          return toCatalogNodes(data) as SourceData<S>;
        }
        case "intentions": {
          const { data } = await api.intentions(intentionsRequestFor(source.query), opts);
          return toIntentions(data) as SourceData<S>;
        }
        case "config-entries": {
          const { data } = await api.configEntries(configEntriesRequestFor(source.query), opts);
          return toConfigEntries(data) as SourceData<S>;
        }
        default:
          throw new Error(`unknown source kind '${(source as { kind: string }).kind}'`);
      }
    },
  };
}

async function readServices(api: ConsulApi, query: ServicesQuery, signal?: AbortSignal, onSkipped?: SkippedServiceListener): Promise<ServiceInstance[]> {
  const q = normalizeServicesQuery(query);
  const opts = signal ? { signal } : {};
  let entries = q.entries;
  if (!entries) {
    const { data } = await api.catalogServices(q.catalog, opts);
    entries = matchingNames(Object.keys(data), q.regexp!).map((service) => ({ request: { ...q.health, service }, userMeta: q.userMeta }));
  }
  const lists = await mapLimited(entries, READ_CONCURRENCY, ({ request, userMeta }) =>
    api.healthService(request, opts).then(
      ({ data }) => toServiceInstances(data, userMeta),
      (err: unknown) => {
        // A name Consul cannot serve is left out (and told); it must not fail the other services' task.
        if (!isRefusedServiceName(err)) throw err;
        onSkipped?.(request.service, err);
        return [];
      },
    ),
  );
  return sortInstances(lists.flat());
}

/**
 * Health reads in flight for one source. Each read holds a connection to the agent, and Consul
 * answers 429 to a client past `http_max_conns_per_client` (default 200): unbounded, `cts once`
 * with 8 tasks of 50 services opened 400 connections and Terraform's own backend calls failed.
 */
const READ_CONCURRENCY = 8;

/** `Promise.all(items.map(fn))` with at most `limit` calls in flight; results keep the input order. */
async function mapLimited<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}

/** The catalog-services regexp ("" = every service). */
export function compileCatalogRegexp(source: string | undefined): RegExp | undefined {
  return source ? compileRegexp(source, "catalog-services.regexp") : undefined;
}

/** Keeps the services whose name matches (all when there is no regexp). */
export function filterCatalog(all: Record<string, string[]>, regexp: RegExp | undefined): Record<string, string[]> {
  if (!regexp) return all;
  const out: Record<string, string[]> = {};
  for (const [name, tags] of Object.entries(all)) if (regexp.test(name)) out[name] = tags;
  return out;
}
