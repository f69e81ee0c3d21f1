import type { HealthEntry, KvEntry, RawConfigEntry, RawIntention, RawNode } from "./client.ts";
import { MAX_DATA_DEPTH } from "../values/data-depth.ts";
import type { CatalogNode, CatalogServices, ConfigEntry, Intention, KvPairs, ServiceInstance } from "./types.ts";

/** Consul's check id of node maintenance mode. */
const NODE_MAINTENANCE = "_node_maintenance";
/** Prefix of the check ids Consul adds for service maintenance mode. */
const SERVICE_MAINTENANCE_PREFIX = "_service_maintenance:";

/**
 * A service's health from its checks, as Consul's `HealthChecks.AggregatedStatus`: maintenance
 * wins, then critical > warning > passing; an unknown check status yields "".
 */
export function aggregateStatus(checks: HealthEntry["Checks"]): string {
  let maintenance = false;
  let critical = false;
  let warning = false;
  for (const check of checks ?? []) {
    if (check.CheckID === NODE_MAINTENANCE || check.CheckID.startsWith(SERVICE_MAINTENANCE_PREFIX)) {
      maintenance = true;
      continue;
    }
    switch (check.Status) {
      case "passing":
        break;
      case "warning":
        warning = true;
        break;
      case "critical":
        critical = true;
        break;
      default:
        return "";
    }
  }
  return maintenance ? "maintenance" : critical ? "critical" : warning ? "warning" : "passing";
}

/**
 * One health entry as a CTS protocol v0 service instance. Every object is built in a fixed key
 * order and maps are copied with sorted keys, so equal instances give equal JSON.stringify output
 * (the watch compares digests of it instead of sorting keys on every answer).
 */
export function toServiceInstance(entry: HealthEntry, userMeta: Record<string, string> = {}): ServiceInstance {
  const { Node: node, Service: svc } = entry;
  return {
    id: svc.ID,
    name: svc.Service,
    kind: svc.Kind ?? "",
    address: svc.Address ? svc.Address : node.Address,
    port: svc.Port ?? 0,
    meta: sortedRecord(svc.Meta),
    tags: sortedStrings(svc.Tags),
    namespace: svc.Namespace ?? "",
    status: aggregateStatus(entry.Checks),
    node: node.Node,
    nodeId: node.ID ?? "",
    nodeAddress: node.Address,
    nodeDatacenter: node.Datacenter ?? "",
    nodeTaggedAddresses: sortedRecord(node.TaggedAddresses),
    nodeMeta: sortedRecord(node.Meta),
    ctsUserDefinedMeta: sortedRecord(userMeta),
    // Only where Consul names them, so local instances keep CTS's shape.
    ...(svc.PeerName ? { peer: svc.PeerName } : {}),
    ...(svc.Partition && svc.Partition !== "default" ? { partition: svc.Partition } : {}),
  };
}

/** Health entries as service instances, sorted by node then id (CTS's order). */
export function toServiceInstances(entries: HealthEntry[], userMeta: Record<string, string> = {}): ServiceInstance[] {
  return sortInstances(entries.map((e) => toServiceInstance(e, userMeta)));
}

/**
 * Sorts instances by node, then id, then service name (ids are unique per node only within a
 * service, so the name keeps a union of several services stable). Byte order, as Go sorts.
 */
export function sortInstances(list: ServiceInstance[]): ServiceInstance[] {
  return list.sort((a, b) => cmp(a.node, b.node) || cmp(a.id, b.id) || cmp(a.name, b.name));
}

/** Returns the instances with the condition's user metadata set on each. */
export function withUserMeta(list: ServiceInstance[], userMeta: Record<string, string> | undefined): ServiceInstance[] {
  if (!userMeta || Object.keys(userMeta).length === 0) return list;
  const meta = sortedRecord(userMeta);
  return list.map((i) => ({ ...i, ctsUserDefinedMeta: { ...meta } }));
}

/** `/v1/catalog/services` as name → sorted tags, names in sorted order. */
export function toCatalogServices(raw: Record<string, string[] | null>): CatalogServices {
  const out: CatalogServices = {};
  for (const name of Object.keys(raw).sort(cmp)) setOwn(out, name, sortedStrings(raw[name]));
  return out;
}

/** KV entries as key → value (values are UTF-8 text; a key without a value maps to ""). */
export function toKvPairs(entries: KvEntry[]): KvPairs {
  const out: KvPairs = {};
  for (const e of [...entries].sort((a, b) => cmp(a.Key, b.Key))) setOwn(out, e.Key, e.Value ?? "");
  return out;
}

/** `/v1/catalog/nodes` as catalog nodes, sorted by name (fixed key order, as instances). */
export function toCatalogNodes(raw: RawNode[]): CatalogNode[] {
  return raw
    .map((n) => ({
      id: n.ID ?? "",
      node: n.Node,
      address: n.Address ?? "",
      datacenter: n.Datacenter ?? "",
      taggedAddresses: sortedRecord(n.TaggedAddresses),
      meta: sortedRecord(n.Meta),
      ...(n.Partition && n.Partition !== "default" ? { partition: n.Partition } : {}),
    }))
    .sort((a, b) => cmp(a.node, b.node) || cmp(a.id, b.id));
}

/** Intentions camelCased, in Consul's order (for one destination: the order Consul evaluates them). */
export function toIntentions(raw: RawIntention[]): Intention[] {
  return raw.map((i) => ({
    sourceName: i.SourceName ?? "",
    sourceNamespace: i.SourceNS ?? "",
    sourcePartition: i.SourcePartition ?? "",
    sourcePeer: i.SourcePeer ?? "",
    sourceSamenessGroup: i.SourceSamenessGroup ?? "",
    sourceType: i.SourceType ?? "",
    destinationName: i.DestinationName ?? "",
    destinationNamespace: i.DestinationNS ?? "",
    destinationPartition: i.DestinationPartition ?? "",
    action: i.Action ?? "",
    permissions: Array.isArray(i.Permissions) ? i.Permissions.map((p) => canonical(p) as Record<string, unknown>) : [],
    precedence: typeof i.Precedence === "number" ? i.Precedence : 0,
    description: i.Description ?? "",
    meta: sortedRecord(i.Meta),
  }));
}

/** Consul's bookkeeping on a config entry: not the entry's data (Hash does not even fit a JS number). */
const ENTRY_BOOKKEEPING = new Set(["CreateIndex", "ModifyIndex", "Hash"]);

/** Config entries as Consul gives them, without its bookkeeping, keys sorted, sorted by kind then name. */
export function toConfigEntries(raw: RawConfigEntry[]): ConfigEntry[] {
  return raw
    .map((e) => {
      const out: Record<string, unknown> = {};
      for (const k of Object.keys(e).sort(cmp)) if (!ENTRY_BOOKKEEPING.has(k)) setOwn(out, k, canonical(e[k]));
      return out as ConfigEntry;
    })
    .sort((a, b) => cmp(String(a.Kind), String(b.Kind)) || cmp(String(a.Name), String(b.Name)));
}

/** A JSON value with every object's keys in byte order (equal data, equal text), MAX_DATA_DEPTH levels deep. */
function canonical(value: unknown, depth = 0): unknown {
  if (depth >= MAX_DATA_DEPTH) return value;
  if (Array.isArray(value)) return value.map((v) => canonical(v, depth + 1));
  if (value && typeof value === "object") {
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(value).sort(cmp)) setOwn(out, k, canonical((value as Record<string, unknown>)[k], depth + 1));
    return out;
  }
  return value;
}

/** Decodes a base64 KV value as Consul sends it raw (the `consul` package does this already). */
export function decodeKvValue(value: string | null | undefined): string {
  return value ? Buffer.from(value, "base64").toString("utf8") : "";
}

/** A copy of a string map with its keys in byte order (null or absent: {}). */
export function sortedRecord(map: Record<string, string> | null | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  if (!map) return out;
  const keys = Object.keys(map);
  if (keys.length > 1) keys.sort(cmp);
  for (const k of keys) setOwn(out, k, map[k]!);
  return out;
}

/** Sets an own property, also for the key "__proto__" (a plain assignment would set the prototype). */
function setOwn<V>(out: Record<string, V>, key: string, value: V): void {
  if (key === "__proto__") Object.defineProperty(out, key, { value, enumerable: true, writable: true, configurable: true });
  else out[key] = value;
}

function sortedStrings(list: string[] | null | undefined): string[] {
  return [...(list ?? [])].sort(cmp);
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
