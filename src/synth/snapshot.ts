import { readFileSync } from "node:fs";
import type { CatalogServices, ConfigEntry, KvPairs, ServiceInstance, Source, SourceData } from "../consul/types.ts";
import { configEntriesFrom, intentionsFrom, listsProblem, nodesFrom, type IntentionInput, type NodeInput } from "./snapshot-lists.ts";

export type { IntentionInput, NodeInput } from "./snapshot-lists.ts";
import { CtsError, messageOf } from "../errors/cts-error.ts";
import { applyFilter, type FilterEntry } from "../consul/filter.ts";
import { normalizeServicesQuery } from "../consul/query.ts";
import { aggregateStatus } from "../consul/convert.ts";
import { sortKeys } from "./stable-json.ts";

/**
 * An offline snapshot of Consul for `cts synth --input`: service instances (any fields left out
 * get CTS's defaults) and KV pairs. Tasks see the same filtering a live Consul would apply: names
 * or regexp, passing-only (dropped when the filter reads Checks.Status, as the daemon does),
 * datacenter, namespace and the Consul filter expression (src/consul/filter.ts).
 */
export interface Snapshot {
  services?: InstanceInput[];
  kv?: KvPairs;
  /** Catalog nodes (default: the nodes of `services`). */
  nodes?: NodeInput[];
  /** Service intentions. */
  intentions?: IntentionInput[];
  /** Config entries, as Consul gives them (`Kind`, `Name`, …). */
  configEntries?: ConfigEntry[];
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
  const lists = listsProblem(snap);
  if (lists) throw new CtsError("INPUT_INVALID", "usage", `${file}: ${lists}`);
  snap.services?.forEach((s, i) => {
    if (!s || typeof s.name !== "string") throw new CtsError("INPUT_INVALID", "usage", `${file}: services[${i}].name must be a string.`);
    for (const field of ["checks", "nodeChecks"] as const) {
      const list = s[field];
      if (list !== undefined && (!Array.isArray(list) || list.some((c) => !c || !["passing", "warning", "critical"].includes(c.status))))
        throw new CtsError("INPUT_INVALID", "usage", `${file}: services[${i}].${field} must be an array of checks, each {"id"?, "name"?, "status": "passing" | "warning" | "critical"}.`);
    }
  });
  return snap;
}

/** A health check as a test or a snapshot states it. */
export interface CheckInput {
  /**
   * Consul's CheckID. Service checks default to the agent's names: `service:<id>` for one,
   * `service:<id>:1`, `service:<id>:2`, … for several; a node check defaults to `node-check:<n>` (from 1).
   */
  id?: string;
  /** The check's name (default: `Service '<name>' check` for a service check, the id for a node check). */
  name?: string;
  status: "passing" | "warning" | "critical";
}

/**
 * A service instance as a test or `cts synth --input` gives it: any field of the instance but
 * `name` may be left out, and its health is stated as Consul keeps it, in checks. Consul gives
 * each instance its service checks and its node's checks, and a filter's `Checks` is both.
 */
export type InstanceInput = Partial<ServiceInstance> & {
  name: string;
  /**
   * The service's checks (default: one check, `service:<id>`, whose status is `status`, passing
   * when not given; `[]`: none). With `checks`, leave `status` out: it is derived from the checks.
   */
  checks?: CheckInput[];
  /**
   * The node's checks (default: Consul's `serfHealth`, passing). Every instance on one named node
   * has the node's checks: give them on one instance of the node (or the same on several).
   */
  nodeChecks?: CheckInput[];
  /** Short for `nodeChecks: [{ id: "serfHealth", status }]`: the node's Serf health. */
  nodeStatus?: CheckInput["status"];
  /** The service in maintenance mode: Consul adds a critical `_service_maintenance:<id>` check. */
  maintenance?: boolean;
  /** The node in maintenance mode: Consul adds a critical `_node_maintenance` check to the node (every instance on it). */
  nodeMaintenance?: boolean;
};

/** One check of a health entry, as the filter sees it. */
type EntryCheck = FilterEntry["Checks"][number];

function invalid(message: string): CtsError {
  return new CtsError("INPUT_INVALID", "usage", message);
}

/** The node's own checks an instance states, if it states any. */
function statedNodeChecks(s: InstanceInput): EntryCheck[] | undefined {
  const node = s.node ?? "";
  if (s.nodeChecks && s.nodeStatus) throw invalid(`service instance ${s.id ?? s.name}: give nodeChecks or nodeStatus, not both.`);
  if (s.nodeStatus) return [nodeCheck(node, { id: "serfHealth", name: "Serf Health Status", status: s.nodeStatus }, 0)];
  return s.nodeChecks?.map((c, k) => nodeCheck(node, c, k));
}

const CHECK_STATUSES: readonly string[] = ["passing", "warning", "critical"];

/** A check's status must be one Consul gives a check (maintenance is a check of its own). */
function checkStatus(c: CheckInput | undefined, where: string): CheckInput["status"] {
  if (!c || !CHECK_STATUSES.includes(c.status)) throw invalid(`${where}: a check's status is "passing", "warning" or "critical" (got ${JSON.stringify(c?.status)}); maintenance is maintenance: true / nodeMaintenance: true.`);
  return c.status;
}

function nodeCheck(node: string, c: CheckInput, k: number): EntryCheck {
  checkStatus(c, `node ${node || "(unnamed)"}`);
  const id = c.id ?? `node-check:${k + 1}`;
  return { Node: node, CheckID: id, Name: c.name ?? (id === "serfHealth" ? "Serf Health Status" : id), Status: c.status, ServiceID: "", ServiceName: "" };
}

/** Consul's default node check: the agent's Serf health, passing. */
const serfHealth = (node: string): EntryCheck => nodeCheck(node, { id: "serfHealth", status: "passing" }, 0);

/** The node's checks of every instance: those stated for the node, else a passing `serfHealth`; maintenance adds `_node_maintenance`. */
export type NodeChecks = (s: InstanceInput) => EntryCheck[];

/**
 * The checks of each node of `services`, as Consul keeps them: one set per named node (per
 * datacenter), stated on any of its instances; an instance without a node name stands alone.
 * Two instances stating different checks (or maintenance) for one node are an error.
 */
export function nodeChecksOf(services: InstanceInput[]): NodeChecks {
  const nodes = new Map<string, { checks?: EntryCheck[]; maintenance?: boolean; by?: string; mby?: string }>();
  const keyOf = (s: InstanceInput) => JSON.stringify([s.nodeDatacenter ?? "", s.node]);
  for (const s of services) {
    if (!s.node) continue;
    const node = nodes.get(keyOf(s)) ?? {};
    nodes.set(keyOf(s), node);
    const who = s.id ?? s.name;
    const checks = statedNodeChecks(s);
    if (checks) {
      if (node.checks && JSON.stringify(node.checks) !== JSON.stringify(checks))
        throw invalid(`node ${s.node}: instances ${node.by} and ${who} give it different checks (a node's checks are the same for every instance on it; give them once).`);
      node.checks = checks;
      node.by = who;
    }
    if (s.nodeMaintenance !== undefined) {
      if (node.maintenance !== undefined && node.maintenance !== s.nodeMaintenance)
        throw invalid(`node ${s.node}: instances ${node.mby} and ${who} disagree on nodeMaintenance (it is the node's).`);
      node.maintenance = s.nodeMaintenance;
      node.mby = who;
    }
  }
  return (s) => {
    const node = s.node ?? "";
    const stated = (s.node ? nodes.get(keyOf(s)) : undefined) ?? { checks: statedNodeChecks(s), maintenance: s.nodeMaintenance };
    const checks = stated.checks ?? [serfHealth(node)];
    return stated.maintenance
      ? [{ Node: node, CheckID: "_node_maintenance", Name: "Node Maintenance Mode", Status: "critical", ServiceID: "", ServiceName: "" }, ...checks]
      : checks;
  };
}

/** The service's own checks (maintenance as Consul's critical `_service_maintenance:<id>` check). */
function serviceChecksOf(s: InstanceInput): EntryCheck[] {
  const id = s.id ?? s.name;
  const node = s.node ?? "";
  if (s.checks && s.status !== undefined) throw invalid(`service instance ${id}: give status or checks, not both (its status is derived from its checks and its node's).`);
  const maintenance = s.maintenance || s.status === "maintenance";
  const given: CheckInput[] = s.checks ?? [{ status: s.status === undefined || s.status === "maintenance" ? "passing" : (s.status as CheckInput["status"]) }];
  const checks: EntryCheck[] = given.map((c, k) => ({
    Node: node,
    CheckID: c.id ?? (given.length === 1 ? `service:${id}` : `service:${id}:${k + 1}`),
    Name: c.name ?? `Service '${s.name}' check`,
    Status: checkStatus(c, `service instance ${id}`),
    ServiceID: id,
    ServiceName: s.name,
  }));
  return maintenance ? [{ Node: node, CheckID: `_service_maintenance:${id}`, Name: "Service Maintenance Mode", Status: "critical", ServiceID: id, ServiceName: s.name }, ...checks] : checks;
}

/** Every check of the instance's health entry: its node's, then its service's (Consul's order). */
function checksOf(s: InstanceInput, nodeChecks: NodeChecks): EntryCheck[] {
  return [...nodeChecks(s), ...serviceChecksOf(s)];
}

/** The instance's aggregated status from all its checks, as the daemon derives it (src/consul/convert.ts). */
function statusOf(s: InstanceInput, nodeChecks: NodeChecks): string {
  return aggregateStatus(checksOf(s, nodeChecks));
}

function complete(s: InstanceInput, nodeChecks: NodeChecks): ServiceInstance {
  return {
    id: s.id ?? s.name,
    name: s.name,
    kind: s.kind ?? "",
    address: s.address ?? s.nodeAddress ?? "",
    port: s.port ?? 0,
    meta: s.meta ?? {},
    tags: [...(s.tags ?? [])].sort(),
    namespace: s.namespace ?? "",
    status: statusOf(s, nodeChecks),
    node: s.node ?? "",
    nodeId: s.nodeId ?? "",
    nodeAddress: s.nodeAddress ?? "",
    nodeDatacenter: s.nodeDatacenter ?? "",
    nodeTaggedAddresses: s.nodeTaggedAddresses ?? {},
    nodeMeta: s.nodeMeta ?? {},
    ctsUserDefinedMeta: s.ctsUserDefinedMeta ?? {},
    ...(s.peer ? { peer: s.peer } : {}),
    ...(s.partition ? { partition: s.partition } : {}),
  };
}

/**
 * An instance as the health entry Consul would filter: `Service.Address` is the instance's own
 * `address` as given (Consul falls back to the node's only in what it returns), and `Checks` are
 * its node's checks (`nodeChecks`: of the snapshot it is in; default: the instance alone) and its
 * service's checks, maintenance as Consul's critical maintenance checks.
 */
export function filterEntryOf(s: InstanceInput, nodeChecks: NodeChecks = nodeChecksOf([s])): FilterEntry {
  const id = s.id ?? s.name;
  const node = s.node ?? "";
  return {
    Node: { ID: s.nodeId ?? "", Node: node, Address: s.nodeAddress ?? "", Datacenter: s.nodeDatacenter ?? "", TaggedAddresses: { ...s.nodeTaggedAddresses }, Meta: { ...s.nodeMeta } },
    Service: { Kind: s.kind ?? "", ID: id, Service: s.name, Tags: [...(s.tags ?? [])], Address: s.address ?? "", Meta: { ...s.meta }, Port: s.port ?? 0 },
    Checks: checksOf(s, nodeChecks),
  };
}

/** The data `source` would yield against this snapshot. */
export function readFromSnapshot(snap: Snapshot, source: Source): SourceData {
  const key = sourceKey(source);
  const answer = snap.answers?.find((a) => sourceKey(a.source) === key);
  if (answer) return structuredClone(answer.data);
  const nodeChecks = nodeChecksOf(snap.services ?? []);
  const all = (snap.services ?? []).map((s) => complete(s, nodeChecks));
  switch (source.kind) {
    case "services": {
      const q = source.query;
      const query = normalizeServicesQuery(q);
      const given = (snap.services ?? []).filter(
        (s) =>
          (query.regexp ? query.regexp.test(s.name) : query.names!.includes(s.name)) &&
          // ?passing keeps an entry only when every check passes, its node's included.
          (!query.health.passing || statusOf(s, nodeChecks) === "passing") &&
          (!q.datacenter || !s.nodeDatacenter || s.nodeDatacenter === q.datacenter) &&
          (!q.namespace || !s.namespace || s.namespace === q.namespace) &&
          (!q.partition || !s.partition || s.partition === q.partition) &&
          // A peer's instances answer only a query of that peer (a sameness group's: any member's).
          (q.samenessGroup ? true : q.peer ? s.peer === q.peer : !s.peer),
      );
      return applyFilter(given, q.filter, (s) => filterEntryOf(s, nodeChecks))
        .map((s) => complete(s, nodeChecks))
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
    case "nodes":
      return nodesFrom(snap.nodes, all, source.query);
    case "intentions":
      return intentionsFrom(snap.intentions, source.query);
    case "config-entries":
      return configEntriesFrom(snap.configEntries, source.query);
  }
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
