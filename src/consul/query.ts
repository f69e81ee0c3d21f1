import { CtsError } from "../errors/cts-error.ts";
import type { CatalogServicesRequest, HealthServiceRequest, KvRequest } from "./client.ts";
import type { CatalogServicesQuery, KvQuery, ServicesQuery } from "./types.ts";

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
  const scope = scopeOf(query);
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
      const request = { ...healthOf({ ...e, passingOnly: query.passingOnly }), service: e.name };
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
function healthOf(q: { datacenter?: string | undefined; namespace?: string | undefined; filter?: string | undefined; passingOnly?: boolean | undefined }): Omit<HealthServiceRequest, "service"> {
  const passing = q.passingOnly !== false && !(q.filter ?? "").includes("Checks.Status");
  return { ...scopeOf(q), passing, ...(q.filter ? { filter: q.filter } : {}) };
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
