import type { CatalogNode, ConfigEntriesQuery, ConfigEntry, Intention, IntentionsQuery, NodesQuery, ServiceInstance } from "../consul/types.ts";
import { CtsError } from "../errors/cts-error.ts";

/** A catalog node as a test or a snapshot gives it: any field but `node` may be left out. */
export type NodeInput = Partial<CatalogNode> & { node: string };
/** An intention as a test or a snapshot gives it: any field but the source and destination names may be left out. */
export type IntentionInput = Partial<Intention> & { sourceName: string; destinationName: string };

/**
 * The nodes a nodes query selects from `given` (or, when no nodes are given, from the nodes of the
 * service instances): datacenter and node meta as Consul applies them. A filter expression is
 * Consul's to evaluate: offline it fails, naming the fix.
 */
export function nodesFrom(given: NodeInput[] | undefined, instances: ServiceInstance[], query: NodesQuery): CatalogNode[] {
  if (query.filter) {
    throw new CtsError(
      "FILTER_UNSUPPORTED",
      "usage",
      `Consul filter '${query.filter}' of a nodes condition: cts evaluates nodes filters only in Consul. Give the nodes the filter selects and pass asGiven: true (Testing), or a \`cts snapshot\` answer (cts synth --input).`,
    );
  }
  const nodes = new Map<string, CatalogNode>();
  if (given) for (const n of given) nodes.set(n.node, completeNode(n));
  else
    for (const s of instances)
      if (s.node && !nodes.has(s.node))
        nodes.set(s.node, { id: s.nodeId, node: s.node, address: s.nodeAddress, datacenter: s.nodeDatacenter, taggedAddresses: { ...s.nodeTaggedAddresses }, meta: { ...s.nodeMeta } });
  return [...nodes.values()]
    .filter((n) => (!query.datacenter || !n.datacenter || n.datacenter === query.datacenter) && Object.entries(query.nodeMeta ?? {}).every(([k, v]) => Object.hasOwn(n.meta, k) && n.meta[k] === v))
    .sort((a, b) => cmp(a.node, b.node) || cmp(a.id, b.id));
}

function completeNode(n: NodeInput): CatalogNode {
  return {
    id: n.id ?? "",
    node: n.node,
    address: n.address ?? "",
    datacenter: n.datacenter ?? "",
    taggedAddresses: { ...n.taggedAddresses },
    meta: { ...n.meta },
    ...(n.partition ? { partition: n.partition } : {}),
  };
}

/**
 * The intentions an intentions query selects: every one, or those whose destination is the named
 * service or `*`, highest precedence first (the order Consul evaluates them in).
 */
export function intentionsFrom(given: IntentionInput[] | undefined, query: IntentionsQuery): Intention[] {
  const all = (given ?? []).map(completeIntention);
  if (query.destination === undefined) return all;
  return all
    .filter((i) => i.destinationName === query.destination || i.destinationName === "*")
    .map((i, n) => ({ i, n }))
    .sort((a, b) => b.i.precedence - a.i.precedence || a.n - b.n)
    .map(({ i }) => i);
}

function completeIntention(i: IntentionInput): Intention {
  // Consul's precedence of an L4 intention between exact names (9), with a wildcard source (8), wildcard destination (6) or both (5).
  const precedence = i.precedence ?? (i.destinationName === "*" ? (i.sourceName === "*" ? 5 : 6) : i.sourceName === "*" ? 8 : 9);
  return {
    sourceName: i.sourceName,
    sourceNamespace: i.sourceNamespace ?? "default",
    sourcePartition: i.sourcePartition ?? "",
    sourcePeer: i.sourcePeer ?? "",
    sourceSamenessGroup: i.sourceSamenessGroup ?? "",
    sourceType: i.sourceType ?? "consul",
    destinationName: i.destinationName,
    destinationNamespace: i.destinationNamespace ?? "default",
    destinationPartition: i.destinationPartition ?? "",
    action: i.action ?? (i.permissions?.length ? "" : "allow"),
    permissions: (i.permissions ?? []).map((p) => structuredClone(p)),
    precedence,
    description: i.description ?? "",
    meta: { ...i.meta },
  };
}

/** The config entries a config-entries query selects: its kind's, or the one of that kind and name; by name. */
export function configEntriesFrom(given: ConfigEntry[] | undefined, query: ConfigEntriesQuery): ConfigEntry[] {
  return (given ?? [])
    .filter((e) => e.Kind === query.kind && (query.name === undefined || e.Name === query.name))
    .map((e) => structuredClone(e))
    .sort((a, b) => cmp(a.Name, b.Name));
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** What is wrong with a snapshot's nodes, intentions or config entries (undefined: nothing). */
export function listsProblem(snap: { nodes?: unknown; intentions?: unknown; configEntries?: unknown }): string | undefined {
  const each = (field: string, list: unknown, ok: (item: Record<string, unknown>) => boolean, shape: string): string | undefined => {
    if (list === undefined) return undefined;
    if (!Array.isArray(list)) return `${field} must be an array of ${shape}.`;
    const bad = list.findIndex((item) => !item || typeof item !== "object" || !ok(item as Record<string, unknown>));
    return bad < 0 ? undefined : `${field}[${bad}] must be ${shape}.`;
  };
  const str = (v: unknown) => typeof v === "string" && v !== "";
  return (
    each("nodes", snap.nodes, (n) => str(n.node), '{"node": "<name>", "address"?, "datacenter"?, "meta"?, …}') ??
    each("intentions", snap.intentions, (i) => str(i.sourceName) && str(i.destinationName), '{"sourceName": "<service>", "destinationName": "<service>", "action"?, "precedence"?, …}') ??
    each("configEntries", snap.configEntries, (e) => str(e.Kind) && str(e.Name), '{"Kind": "<kind>", "Name": "<name>", …} as Consul gives it')
  );
}
