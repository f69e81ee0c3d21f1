import { CtsError } from "../errors.ts";
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
  const scope = { ...(query.datacenter ? { datacenter: query.datacenter } : {}), ...(query.namespace ? { namespace: query.namespace } : {}) };
  // As CTS: a filter that inspects check status would be defeated by ?passing.
  const passing = query.passingOnly !== false && !(query.filter ?? "").includes("Checks.Status");
  const health = { ...scope, passing, ...(query.filter ? { filter: query.filter } : {}) };
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
    return { names, health, catalog: scope, userMeta };
  }
  return { regexp: compileRegexp(query.regexp!, "services.regexp"), health, catalog: scope, userMeta };
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
