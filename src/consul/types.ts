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
  /** The cluster peer the instance was imported from (only on instances of a peer: a `peer` or `samenessGroup` query). */
  peer?: string;
  /** The admin partition of the instance (Consul Enterprise; only when Consul names one). */
  partition?: string;
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
   * The cluster peer whose exported instances to watch (Consul's `?peer=`; Consul 1.14+, every
   * edition). Only with `names`: Consul lists no peer's service names for a regexp.
   */
  peer?: string;
  /** The admin partition (Consul's `?partition=`; Consul Enterprise). */
  partition?: string;
  /**
   * The sameness group whose members' instances to watch, in failover order (Consul's
   * `?sameness-group=`; Consul Enterprise 1.16+). Only with `names`; not with `peer`.
   */
  samenessGroup?: string;
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

/** Options a nodes query takes (`/v1/catalog/nodes`). */
export interface NodesQuery {
  /** Datacenter (default: the agent's). */
  datacenter?: string;
  /** Admin partition (Consul Enterprise). */
  partition?: string;
  /** A Consul filter expression on nodes (e.g. `Meta.role == "edge"`). */
  filter?: string;
  /** Only nodes with all of this metadata (Consul's `?node-meta=k:v`). */
  nodeMeta?: Record<string, string>;
}

/** A catalog node, as `/v1/catalog/nodes` lists it (camelCased). Untrusted: it came from Consul. */
export interface CatalogNode {
  /** Node id ("" when the node has none). */
  id: string;
  /** Node name. */
  node: string;
  /** Node address. */
  address: string;
  /** Datacenter. */
  datacenter: string;
  /** Tagged addresses ({} when none). */
  taggedAddresses: Record<string, string>;
  /** Node metadata ({} when none). */
  meta: Record<string, string>;
  /** Admin partition (Consul Enterprise; only when Consul names one). */
  partition?: string;
}

/** Options an intentions query takes. */
export interface IntentionsQuery {
  /**
   * The destination service whose intentions to watch, in the order Consul evaluates them
   * (`/v1/connect/intentions/match?by=destination`: wildcard intentions included). Absent: every
   * intention (`/v1/connect/intentions`).
   */
  destination?: string;
  /** Datacenter (default: the agent's). */
  datacenter?: string;
  /** Namespace (Consul Enterprise). */
  namespace?: string;
  /** Admin partition (Consul Enterprise). */
  partition?: string;
}

/** One service intention (camelCased from Consul's). Untrusted: it came from Consul. */
export interface Intention {
  sourceName: string;
  sourceNamespace: string;
  /** Admin partition of the source ("" without partitions). */
  sourcePartition: string;
  /** The cluster peer of the source ("" for a local source). */
  sourcePeer: string;
  /** The sameness group of the source ("" when none; Consul Enterprise). */
  sourceSamenessGroup: string;
  /** "consul" for a Consul service. */
  sourceType: string;
  destinationName: string;
  destinationNamespace: string;
  destinationPartition: string;
  /** "allow" or "deny"; "" for an L7 intention, whose `permissions` decide. */
  action: string;
  /** L7 permissions as Consul gives them (`[{ Action, HTTP?, JWT? }]`), [] for an L4 intention. */
  permissions: Array<Record<string, unknown>>;
  /** Consul's precedence: higher is evaluated first. */
  precedence: number;
  description: string;
  meta: Record<string, string>;
}

/** Options a config-entries query takes. */
export interface ConfigEntriesQuery {
  /** The config entry kind (`service-defaults`, `service-intentions`, `exported-services`, …). */
  kind: string;
  /** One entry by name (absent: every entry of the kind). */
  name?: string;
  /** Datacenter (default: the agent's). */
  datacenter?: string;
  /** Namespace (Consul Enterprise). */
  namespace?: string;
  /** Admin partition (Consul Enterprise). */
  partition?: string;
}

/**
 * A config entry as Consul gives it (`Kind`, `Name` and the kind's own fields, in Consul's
 * spelling), without Consul's bookkeeping (`CreateIndex`, `ModifyIndex`, `Hash`). Untrusted.
 */
export type ConfigEntry = { Kind: string; Name: string } & Record<string, unknown>;

/** One thing a task depends on in Consul: its condition or one of its inputs. */
export type Source =
  | { kind: "services"; query: ServicesQuery }
  | { kind: "catalog-services"; query: CatalogServicesQuery }
  | { kind: "consul-kv"; query: KvQuery }
  | { kind: "nodes"; query: NodesQuery }
  | { kind: "intentions"; query: IntentionsQuery }
  | { kind: "config-entries"; query: ConfigEntriesQuery };

/** The data a source yields. */
export type SourceData<S extends Source = Source> = S extends { kind: "services" }
  ? ServiceInstance[]
  : S extends { kind: "catalog-services" }
    ? CatalogServices
    : S extends { kind: "nodes" }
      ? CatalogNode[]
      : S extends { kind: "intentions" }
        ? Intention[]
        : S extends { kind: "config-entries" }
          ? ConfigEntry[]
          : KvPairs;

/** Told that a service Consul cannot serve was left out of a source's data, the others kept. */
export type SkippedServiceListener = (service: string, error: CtsError) => void;

/** Reads a source once, without blocking (for `cts synth`, `cts once`, inspect). */
export interface CatalogReader {
  /** Current data for a source; services Consul cannot serve are left out and told to `onSkipped`. */
  read<S extends Source>(source: S, signal?: AbortSignal, onSkipped?: SkippedServiceListener): Promise<SourceData<S>>;
}
