import type { CtsError } from "../errors/cts-error.ts";

/**
 * The data tasks receive, in the words of CTS's services protocol v0 (camelCased). Everything in
 * here came from Consul and is untrusted: synthesis escapes it before it reaches Terraform.
 */
export interface ServiceInstance {
  /** Service instance id (unique per node). */
  id: string;
  /** Service name. */
  name: string;
  /** Service kind ("" for a typical service, "connect-proxy", …). */
  kind: string;
  /** Service address, falling back to the node address when the service has none. */
  address: string;
  /** Service port. */
  port: number;
  /** Service metadata ({} when none). */
  meta: Record<string, string>;
  /** Service tags, sorted ([] when none). */
  tags: string[];
  /** Namespace ("" on Consul without namespaces). */
  namespace: string;
  /** Aggregated health: passing | warning | critical | maintenance. */
  status: string;
  /** Node name. */
  node: string;
  /** Node id. */
  nodeId: string;
  /** Node address. */
  nodeAddress: string;
  /** Node datacenter. */
  nodeDatacenter: string;
  /** Node tagged addresses ({} when none). */
  nodeTaggedAddresses: Record<string, string>;
  /** Node metadata ({} when none). */
  nodeMeta: Record<string, string>;
  /** Metadata the task's condition adds to every instance (CTS's cts_user_defined_meta). */
  ctsUserDefinedMeta: Record<string, string>;
}

/** Catalog services: service name → sorted tags. */
export type CatalogServices = Record<string, string[]>;

/** Consul KV pairs: key → value (decoded as UTF-8). */
export type KvPairs = Record<string, string>;

/** Options a services query takes (a condition or an input). */
export interface ServicesQuery {
  /** Service names to watch. Exactly one of names and regexp. */
  names?: string[];
  /** A regular expression on service names (new matching services are picked up at once). */
  regexp?: string;
  /** Datacenter (default: the agent's). */
  datacenter?: string;
  /** Namespace (Consul Enterprise). */
  namespace?: string;
  /** A Consul filter expression applied to health entries. */
  filter?: string;
  /** Metadata added to every instance as ctsUserDefinedMeta. */
  userMeta?: Record<string, string>;
  /** Only instances whose checks all pass (default true). Dropped when the filter mentions Checks.Status. */
  passingOnly?: boolean;
  /**
   * One query per entry, each with its own datacenter, namespace, filter and user meta: CTS's
   * deprecated task `services` list, whose `service {}` blocks may differ. With it, `names` lists
   * the entries' names and the query-wide datacenter, namespace, filter and userMeta are unused.
   */
  each?: ServiceQueryEntry[];
}

/** One service of a services query with settings of its own (see ServicesQuery.each). */
export interface ServiceQueryEntry {
  name: string;
  datacenter?: string;
  namespace?: string;
  filter?: string;
  userMeta?: Record<string, string>;
}

/** Options a catalog-services condition takes. */
export interface CatalogServicesQuery {
  /** Regular expression on service names; "" means every service. */
  regexp: string;
  /** Datacenter (default: the agent's). */
  datacenter?: string;
  /** Namespace (Consul Enterprise). */
  namespace?: string;
  /** Only services on nodes with this metadata. */
  nodeMeta?: Record<string, string>;
}

/** Options a consul-kv query takes. */
export interface KvQuery {
  /** The key, or the prefix when recurse is set. */
  path: string;
  /** Every key under path (default false: the one key). */
  recurse?: boolean;
  /** Datacenter (default: the agent's). */
  datacenter?: string;
  /** Namespace (Consul Enterprise). */
  namespace?: string;
}

/** One thing a task depends on in Consul: its condition or one of its inputs. */
export type Source =
  | { kind: "services"; query: ServicesQuery }
  | { kind: "catalog-services"; query: CatalogServicesQuery }
  | { kind: "consul-kv"; query: KvQuery };

/** The data a source yields. */
export type SourceData<S extends Source = Source> = S extends { kind: "services" }
  ? ServiceInstance[]
  : S extends { kind: "catalog-services" }
    ? CatalogServices
    : KvPairs;

/** Told that a service Consul cannot serve was left out of a source's data, the others kept. */
export type SkippedServiceListener = (service: string, error: CtsError) => void;

/** Reads a source once, without blocking (for `cts synth`, `cts once`, inspect). */
export interface CatalogReader {
  /** Current data for a source; services Consul cannot serve are left out and told to `onSkipped`. */
  read<S extends Source>(source: S, signal?: AbortSignal, onSkipped?: SkippedServiceListener): Promise<SourceData<S>>;
}
