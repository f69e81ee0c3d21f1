import { CtsError } from "../errors/cts-error.ts";
import type { CatalogNodesRequest, CatalogServicesRequest, ConfigEntriesRequest, HealthServiceRequest, IntentionsRequest, KvRequest } from "./client.ts";
import type { CatalogServicesQuery, ConfigEntriesQuery, IntentionsQuery, KvQuery, NodesQuery, ServicesQuery } from "./types.ts";

/** A services query checked and reduced to the Consul requests it makes. */
export interface NormalizedServicesQuery {
  /** Exactly one of names / regexp is set. */
  names?: string[];
  regexp?: RegExp;
  /** The health request for each name, minus the name. */
  health: Omit<HealthServiceRequest, "service">;
  /** The catalog request a regexp query watches. */
  catalog: CatalogServicesRequest;
  userMeta: Record<string, string>;
  /** With names: the health request of each service (its own settings with `each`) and the meta its instances get. */
  entries?: Array<{ request: HealthServiceRequest; userMeta: Record<string, string> }>;
}

/** Checks a services query and derives its requests (`passing` dropped when the filter reads Checks.Status). */
export function normalizeServicesQuery(query: ServicesQuery): NormalizedServicesQuery {
  const hasNames = query.names !== undefined;
  const hasRegexp = query.regexp !== undefined;
  if (hasNames === hasRegexp) {
    throw new CtsError(
      "SERVICES_QUERY_INVALID",
      "usage",
      hasNames
        ? "A services condition has both names and regexp. Use names for a fixed list or regexp to match services, not both."
        : "A services condition has neither names nor regexp. Name at least one service or use a regexp.",
    );
  }
  // Consul's catalog list has no peer parameter, and a sameness group is asked service by service.
  if (hasRegexp && (query.peer || query.samenessGroup)) {
    throw new CtsError(
      "SERVICES_QUERY_INVALID",
      "usage",
      `A services condition with ${query.peer ? "peer" : "samenessGroup"} needs names, not a regexp: Consul lists no ${query.peer ? "peer's" : "sameness group's"} service names to match. Name the services.`,
    );
  }
  if (query.peer && query.samenessGroup) {
    throw new CtsError("SERVICES_QUERY_INVALID", "usage", "A services condition has both peer and samenessGroup. A sameness group already spans its peers: use one of them.");
  }
  const scope = { ...scopeOf(query), ...(query.partition ? { partition: query.partition } : {}) };
  const health = healthOf(query);
  const userMeta = { ...(query.userMeta ?? {}) };
  if (hasNames) {
    const names = [...new Set(query.names)].sort();
    if (names.length === 0 || names.some((n) => typeof n !== "string" || n === "")) {
      throw new CtsError(
        "SERVICES_QUERY_INVALID",
        "usage",
        "A services condition's names is empty or holds an empty name. Name at least one service or use a regexp.",
      );
    }
    // Two entries asking the same thing are one query (the first one's meta wins).
    const each = new Map<string, { request: HealthServiceRequest; userMeta: Record<string, string> }>();
    for (const e of query.each ?? []) {
      const request = { ...healthOf({ ...e, passingOnly: query.passingOnly, peer: query.peer, partition: query.partition, samenessGroup: query.samenessGroup }), service: e.name };
      const id = JSON.stringify(Object.entries(request).sort(([a], [b]) => (a < b ? -1 : 1)));
      if (!each.has(id)) each.set(id, { request, userMeta: { ...(e.userMeta ?? {}) } });
    }
    const entries = query.each ? [...each.values()] : names.map((service) => ({ request: { ...health, service }, userMeta }));
    return { names, health, catalog: scope, userMeta, entries };
  }
  return { regexp: compileRegexp(query.regexp!, "services.regexp"), health, catalog: scope, userMeta };
}

function scopeOf(q: { datacenter?: string | undefined; namespace?: string | undefined }): { datacenter?: string; namespace?: string } {
  return { ...(q.datacenter ? { datacenter: q.datacenter } : {}), ...(q.namespace ? { namespace: q.namespace } : {}) };
}

/** The health request of a query or entry, minus the name. As CTS: a filter that inspects check status would be defeated by ?passing. */
function healthOf(q: {
  datacenter?: string | undefined;
  namespace?: string | undefined;
  filter?: string | undefined;
  passingOnly?: boolean | undefined;
  peer?: string | undefined;
  partition?: string | undefined;
  samenessGroup?: string | undefined;
}): Omit<HealthServiceRequest, "service"> {
  const passing = q.passingOnly !== false && !(q.filter ?? "").includes("Checks.Status");
  return {
    ...scopeOf(q),
    ...(q.partition ? { partition: q.partition } : {}),
    ...(q.peer ? { peer: q.peer } : {}),
    ...(q.samenessGroup ? { samenessGroup: q.samenessGroup } : {}),
    passing,
    ...(q.filter ? { filter: q.filter } : {}),
  };
}

/** The catalog request of a catalog-services query. */
export function catalogRequestFor(query: CatalogServicesQuery): CatalogServicesRequest {
  return {
    ...(query.datacenter ? { datacenter: query.datacenter } : {}),
    ...(query.namespace ? { namespace: query.namespace } : {}),
    ...(query.nodeMeta && Object.keys(query.nodeMeta).length ? { nodeMeta: { ...query.nodeMeta } } : {}),
  };
}

/** The KV request of a consul-kv query. */
export function kvRequestFor(query: KvQuery): KvRequest {
  if (typeof query.path !== "string") {
    throw new CtsError("KV_QUERY_INVALID", "usage", "A consul-kv condition has no path. Set path to the key (or the prefix, with recurse).");
  }
  return {
    path: query.path.replace(/^\/+/, ""),
    recurse: query.recurse === true,
    ...(query.datacenter ? { datacenter: query.datacenter } : {}),
    ...(query.namespace ? { namespace: query.namespace } : {}),
  };
}

/** The request of a nodes query. */
export function nodesRequestFor(query: NodesQuery): CatalogNodesRequest {
  return {
    ...(query.datacenter ? { datacenter: query.datacenter } : {}),
    ...(query.partition ? { partition: query.partition } : {}),
    ...(query.filter ? { filter: query.filter } : {}),
    ...(query.nodeMeta && Object.keys(query.nodeMeta).length ? { nodeMeta: { ...query.nodeMeta } } : {}),
  };
}

/** The request of an intentions query. */
export function intentionsRequestFor(query: IntentionsQuery): IntentionsRequest {
  if (query.destination !== undefined && (typeof query.destination !== "string" || query.destination === "")) {
    throw new CtsError("INTENTIONS_QUERY_INVALID", "usage", "An intentions condition's destination is empty. Name the destination service, or leave destination out to watch every intention.");
  }
  return {
    ...(query.destination ? { destination: query.destination } : {}),
    ...(query.datacenter ? { datacenter: query.datacenter } : {}),
    ...(query.namespace ? { namespace: query.namespace } : {}),
    ...(query.partition ? { partition: query.partition } : {}),
  };
}

/** A config entry kind as Consul spells kinds (`service-defaults`, `exported-services`, …). */
export const CONFIG_ENTRY_KIND = /^[a-z][a-z0-9-]*$/;

/** The request of a config-entries query. */
export function configEntriesRequestFor(query: ConfigEntriesQuery): ConfigEntriesRequest {
  if (typeof query.kind !== "string" || !CONFIG_ENTRY_KIND.test(query.kind)) {
    throw new CtsError("CONFIG_ENTRIES_QUERY_INVALID", "usage", `A config-entries condition's kind ${JSON.stringify(query.kind)} is not a config entry kind. Use Consul's spelling, e.g. "service-defaults" or "service-intentions".`);
  }
  if (query.name !== undefined && (typeof query.name !== "string" || query.name === "")) {
    throw new CtsError("CONFIG_ENTRIES_QUERY_INVALID", "usage", "A config-entries condition's name is empty. Name the entry, or leave name out to watch every entry of the kind.");
  }
  return {
    kind: query.kind,
    ...(query.name ? { name: query.name } : {}),
    ...(query.datacenter ? { datacenter: query.datacenter } : {}),
    ...(query.namespace ? { namespace: query.namespace } : {}),
    ...(query.partition ? { partition: query.partition } : {}),
  };
}

/** Compiles a user's regexp (unanchored, as Go's MatchString), naming the field when it is invalid. */
export function compileRegexp(source: string, field: string): RegExp {
  try {
    return new RegExp(source);
  } catch (cause) {
    throw new CtsError("REGEXP_INVALID", "usage", `${field} '${source}' is not a valid regular expression (${(cause as Error).message}). Fix the pattern.`, {
      cause,
      detail: { field },
    });
  }
}

/** Service names matching a regexp, sorted. */
export function matchingNames(names: Iterable<string>, regexp: RegExp): string[] {
  return [...names].filter((n) => regexp.test(n)).sort();
}
