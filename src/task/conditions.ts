import type { CatalogServicesQuery, ConfigEntriesQuery, IntentionsQuery, KvQuery, NodesQuery, ServicesQuery } from "../consul/types.ts";
import type { ServicesTrigger } from "./service-trigger.ts";

/** Triggers on changes to the instances of the named (or matching) services. */
export interface ServicesCondition {
  readonly kind: "services";
  readonly query: ServicesQuery;
  /**
   * Which changes run the task (default `"change"`: any change). Only a condition triggers:
   * a services input never does, so it takes no trigger. See docs/tasks.md, "Event triggers".
   */
  readonly trigger?: ServicesTrigger;
}

/** What `services()` takes: the query, and for a condition which of its changes run the task. */
export interface ServicesOptions extends ServicesQuery {
  /**
   * `"change"` (default): any change of the instances' data; `"register"`: an instance appeared;
   * `"deregister"`: one went away (or left a health filter, e.g. became critical under the default
   * passing-only filter); `{ above: n }` / `{ below: n }`: the number of instances crossed n in that
   * direction. The task still receives every current instance.
   */
  trigger?: ServicesTrigger;
}
/** Triggers when the set of service names in the catalog changes. */
export interface CatalogServicesCondition {
  readonly kind: "catalog-services";
  readonly query: CatalogServicesQuery;
}
/** Triggers on changes to a KV key or prefix. */
export interface ConsulKvCondition {
  readonly kind: "consul-kv";
  readonly query: KvQuery;
}
/** Triggers on changes to the catalog's nodes (`/v1/catalog/nodes`: filter, datacenter, node meta). */
export interface NodesCondition {
  readonly kind: "nodes";
  readonly query: NodesQuery;
}
/** Triggers on changes to service intentions: one destination's (in evaluation order), or all. */
export interface IntentionsCondition {
  readonly kind: "intentions";
  readonly query: IntentionsQuery;
}
/** Triggers on changes to config entries of one kind (every entry, or one by name). */
export interface ConfigEntriesCondition {
  readonly kind: "config-entries";
  readonly query: ConfigEntriesQuery;
}
/** Triggers on a cron schedule (seconds and year fields allowed). */
export interface ScheduleCondition {
  readonly kind: "schedule";
  readonly cron: string;
}

/** What triggers a task. */
export type Condition =
  | ServicesCondition
  | CatalogServicesCondition
  | ConsulKvCondition
  | NodesCondition
  | IntentionsCondition
  | ConfigEntriesCondition
  | ScheduleCondition;

/** Data a task reads at each run without being triggered by it (CTS's module_input). */
export interface TaskInputs {
  /** Service instances passed as `input.services`. */
  services?: ServicesCondition;
  /** KV pairs passed as `input.kv`. */
  kv?: ConsulKvCondition;
  /** Catalog nodes passed as `input.nodes`. */
  nodes?: NodesCondition;
  /** Service intentions passed as `input.intentions`. */
  intentions?: IntentionsCondition;
  /** Config entries passed as `input.configEntries`. */
  configEntries?: ConfigEntriesCondition;
}

/** A services condition or input: `names` or `regexp`, passing instances only by default; a condition may set `trigger`. */
export function services(options: ServicesOptions): ServicesCondition {
  const { trigger, ...query } = options;
  return { kind: "services", query: { passingOnly: true, ...query }, ...(trigger === undefined ? {} : { trigger }) };
}

/** A catalog-services condition: `regexp: ""` watches every service name. */
export function catalogServices(query: Partial<CatalogServicesQuery> = {}): CatalogServicesCondition {
  return { kind: "catalog-services", query: { ...query, regexp: query.regexp ?? "" } };
}

/** A consul-kv condition or input: one key, or every key under `path` with `recurse`. */
export function consulKv(query: KvQuery): ConsulKvCondition {
  return { kind: "consul-kv", query: { recurse: false, ...query } };
}

/** A nodes condition or input: every node of the datacenter, or those `filter` and `nodeMeta` select. */
export function nodes(query: NodesQuery = {}): NodesCondition {
  return { kind: "nodes", query: { ...query } };
}

/** An intentions condition or input: `destination`'s intentions in the order Consul evaluates them, or every intention. */
export function intentions(query: IntentionsQuery = {}): IntentionsCondition {
  return { kind: "intentions", query: { ...query } };
}

/** A config-entries condition or input: every entry of `kind`, or the one named `name`. */
export function configEntries(query: ConfigEntriesQuery): ConfigEntriesCondition {
  return { kind: "config-entries", query: { ...query } };
}

/** A schedule condition: `cron` with 5, 6 (seconds) or 7 (seconds and year) fields. */
export function schedule(opts: { cron: string }): ScheduleCondition {
  return { kind: "schedule", cron: opts.cron };
}
