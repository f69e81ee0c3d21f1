import { readFileSync } from "node:fs";
import type { CatalogServices, KvPairs, ServiceInstance, Source, SourceData } from "../consul/types.ts";
import { CtsError, messageOf } from "../errors/cts-error.ts";
import { applyFilter, type FilterEntry } from "../consul/filter.ts";
import { normalizeServicesQuery } from "../consul/query.ts";
import { sortKeys } from "./stable-json.ts";

/**
 * An offline snapshot of Consul for `cts synth --input`: service instances (any fields left out
 * get CTS's defaults) and KV pairs. Tasks see the same filtering a live Consul would apply: names
 * or regexp, passing-only (dropped when the filter reads Checks.Status, as the daemon does),
 * datacenter, namespace and the Consul filter expression (src/consul/filter.ts).
 */
export interface Snapshot {
  services?: Array<Partial<ServiceInstance> & { name: string }>;
  kv?: KvPairs;
  /**
   * What Consul answered to each source, as `cts snapshot` saved it: a task whose source is here
   * gets exactly that answer (Consul's filter included); other sources are served from
   * `services`/`kv` above (a task changed in review may ask something new).
   */
  answers?: Array<{ source: Source; data: SourceData }>;
}

/** The snapshot of the data `sources` read now (`cts snapshot`): every answer, plus the instances and keys in them. */
export async function takeSnapshot(sources: Source[], read: (source: Source) => Promise<SourceData> | SourceData): Promise<Snapshot> {
  const answers: Array<{ source: Source; data: SourceData }> = [];
  const seen = new Set<string>();
  const services = new Map<string, ServiceInstance>();
  const kv: KvPairs = {};
  for (const source of sources) {
    const key = sourceKey(source);
    if (seen.has(key)) continue;
    seen.add(key);
    const data = await read(source);
    answers.push({ source, data });
    if (source.kind === "services") {
      for (const s of data as ServiceInstance[]) services.set(JSON.stringify([s.nodeDatacenter, s.namespace, s.node, s.id]), { ...s, ctsUserDefinedMeta: {} });
    } else if (source.kind === "consul-kv") Object.assign(kv, data);
  }
  // The data keeps Consul's (canonical) key order: a task may serialize it as it comes.
  return { services: [...services.values()], kv, answers };
}

/** A source's identity (key order does not matter). */
function sourceKey(source: Source): string {
  return JSON.stringify(sortKeys(source));
}

/** Reads and checks a snapshot file. */
export function readSnapshot(file: string): Snapshot {
  let data: unknown;
  try {
    data = JSON.parse(readFileSync(file, "utf8"));
  } catch (cause) {
    throw new CtsError("INPUT_INVALID", "usage", `${file}: ${messageOf(cause)}. Pass a JSON file like {"services":[{"name":"web","id":"web-1","address":"10.0.0.1","port":80}],"kv":{}}.`, { cause });
  }
  const snap = data as Snapshot;
  if (!snap || typeof snap !== "object" || (snap.services !== undefined && !Array.isArray(snap.services)))
    throw new CtsError("INPUT_INVALID", "usage", `${file}: services must be an array of instances.`);
  if (snap.answers !== undefined && (!Array.isArray(snap.answers) || snap.answers.some((a) => !a || typeof a !== "object" || !a.source || typeof a.source.kind !== "string" || a.data === undefined)))
    throw new CtsError("INPUT_INVALID", "usage", `${file}: answers must be an array of {source, data} as \`cts snapshot\` writes them.`);
  snap.services?.forEach((s, i) => {
    if (!s || typeof s.name !== "string") throw new CtsError("INPUT_INVALID", "usage", `${file}: services[${i}].name must be a string.`);
  });
  return snap;
}

function complete(s: Partial<ServiceInstance> & { name: string }): ServiceInstance {
  return {
    id: s.id ?? s.name,
    name: s.name,
    kind: s.kind ?? "",
    address: s.address ?? s.nodeAddress ?? "",
    port: s.port ?? 0,
    meta: s.meta ?? {},
    tags: [...(s.tags ?? [])].sort(),
    namespace: s.namespace ?? "",
    status: s.status ?? "passing",
    node: s.node ?? "",
    nodeId: s.nodeId ?? "",
    nodeAddress: s.nodeAddress ?? "",
    nodeDatacenter: s.nodeDatacenter ?? "",
    nodeTaggedAddresses: s.nodeTaggedAddresses ?? {},
    nodeMeta: s.nodeMeta ?? {},
    ctsUserDefinedMeta: s.ctsUserDefinedMeta ?? {},
  };
}

/**
 * An instance as the health entry Consul would filter: `Service.Address` is the instance's own
 * `address` as given (Consul falls back to the node's only in what it returns), and the instance's
 * status is one service check (maintenance is Consul's critical maintenance check).
 */
export function filterEntryOf(s: Partial<ServiceInstance> & { name: string }): FilterEntry {
  const id = s.id ?? s.name;
  const node = s.node ?? "";
  const status = s.status ?? "passing";
  return {
    Node: { ID: s.nodeId ?? "", Node: node, Address: s.nodeAddress ?? "", Datacenter: s.nodeDatacenter ?? "", TaggedAddresses: { ...s.nodeTaggedAddresses }, Meta: { ...s.nodeMeta } },
    Service: { Kind: s.kind ?? "", ID: id, Service: s.name, Tags: [...(s.tags ?? [])], Address: s.address ?? "", Meta: { ...s.meta }, Port: s.port ?? 0 },
    Checks: [{ Node: node, Status: status === "maintenance" ? "critical" : status, ServiceID: id, ServiceName: s.name }],
  };
}

/** The data `source` would yield against this snapshot. */
export function readFromSnapshot(snap: Snapshot, source: Source): SourceData {
  const key = sourceKey(source);
  const answer = snap.answers?.find((a) => sourceKey(a.source) === key);
  if (answer) return structuredClone(answer.data);
  const all = (snap.services ?? []).map(complete);
  switch (source.kind) {
    case "services": {
      const q = source.query;
      const query = normalizeServicesQuery(q);
      const given = (snap.services ?? []).filter(
        (s) =>
          (query.regexp ? query.regexp.test(s.name) : query.names!.includes(s.name)) &&
          (!query.health.passing || (s.status ?? "passing") === "passing") &&
          (!q.datacenter || !s.nodeDatacenter || s.nodeDatacenter === q.datacenter) &&
          (!q.namespace || !s.namespace || s.namespace === q.namespace),
      );
      return applyFilter(given, q.filter, filterEntryOf)
        .map(complete)
        .map((s) => ({ ...s, ctsUserDefinedMeta: { ...(q.userMeta ?? {}) } }))
        .sort((a, b) => (a.node === b.node ? cmp(a.id, b.id) : cmp(a.node, b.node)));
    }
    case "catalog-services": {
      const { regexp, datacenter, nodeMeta } = source.query;
      const re = new RegExp(regexp);
      const onNode = (s: ServiceInstance) =>
        (!datacenter || !s.nodeDatacenter || s.nodeDatacenter === datacenter) && Object.entries(nodeMeta ?? {}).every(([k, v]) => Object.hasOwn(s.nodeMeta, k) && s.nodeMeta[k] === v);
      const out: CatalogServices = {};
      for (const s of all) if (re.test(s.name) && onNode(s)) out[s.name] = [...new Set([...(out[s.name] ?? []), ...s.tags])].sort();
      return out;
    }
    case "consul-kv": {
      const { path, recurse } = source.query;
      const out: KvPairs = {};
      for (const [k, v] of Object.entries(snap.kv ?? {})) if (recurse ? k.startsWith(path) : k === path) out[k] = v;
      return out;
    }
  }
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
