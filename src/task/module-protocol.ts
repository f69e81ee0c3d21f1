import type { CatalogNode, Intention, ServiceInstance } from "../consul/types.ts";

/** One instance in CTS's protocol-v0 shape (the `services` variable CTS modules declare). */
export interface CtsService {
  id: string;
  name: string;
  kind: string;
  address: string;
  port: number;
  meta: Record<string, string>;
  tags: string[];
  namespace: string;
  status: string;
  node: string;
  node_id: string;
  node_address: string;
  node_datacenter: string;
  node_tagged_addresses: Record<string, string>;
  node_meta: Record<string, string>;
  cts_user_defined_meta: Record<string, string>;
}

/** CTS's map key for an instance: `id.node.namespace.datacenter`, empty parts dropped. */
export function ctsServiceKey(s: ServiceInstance): string {
  return [s.id, s.node, s.namespace, s.nodeDatacenter].filter((p) => p !== "").join(".");
}

/** Converts instances to CTS's `services` variable: a map keyed as CTS keys it. */
export function toCtsServices(instances: readonly ServiceInstance[]): Record<string, CtsService> {
  const out: Record<string, CtsService> = {};
  for (const s of instances) {
    out[ctsServiceKey(s)] = {
      id: s.id,
      name: s.name,
      kind: s.kind,
      address: s.address,
      port: s.port,
      meta: s.meta,
      tags: s.tags,
      namespace: s.namespace,
      status: s.status,
      node: s.node,
      node_id: s.nodeId,
      node_address: s.nodeAddress,
      node_datacenter: s.nodeDatacenter,
      node_tagged_addresses: s.nodeTaggedAddresses,
      node_meta: s.nodeMeta,
      cts_user_defined_meta: s.ctsUserDefinedMeta,
    };
  }
  return out;
}

/** The `nodes` variable cts passes a module (cts's own; CTS has none): a list of these, by node name. */
export interface ModuleNode {
  id: string;
  node: string;
  address: string;
  datacenter: string;
  /** "" without admin partitions. */
  partition: string;
  tagged_addresses: Record<string, string>;
  meta: Record<string, string>;
}

/** Catalog nodes as the module's `nodes` variable. */
export function toModuleNodes(nodes: readonly CatalogNode[]): ModuleNode[] {
  return nodes.map((n) => ({
    id: n.id,
    node: n.node,
    address: n.address,
    datacenter: n.datacenter,
    partition: n.partition ?? "",
    tagged_addresses: n.taggedAddresses,
    meta: n.meta,
  }));
}

/**
 * The `intentions` variable cts passes a module (cts's own): a list of these in Consul's order.
 * `permissions` is the L7 permissions as JSON text ("[]" for an L4 intention), so the variable
 * keeps one type whatever the permissions hold: `jsondecode()` it in the module.
 */
export interface ModuleIntention {
  source_name: string;
  source_namespace: string;
  source_partition: string;
  source_peer: string;
  source_sameness_group: string;
  source_type: string;
  destination_name: string;
  destination_namespace: string;
  destination_partition: string;
  action: string;
  permissions: string;
  precedence: number;
  description: string;
  meta: Record<string, string>;
}

/** Intentions as the module's `intentions` variable. */
export function toModuleIntentions(intentions: readonly Intention[]): ModuleIntention[] {
  return intentions.map((i) => ({
    source_name: i.sourceName,
    source_namespace: i.sourceNamespace,
    source_partition: i.sourcePartition,
    source_peer: i.sourcePeer,
    source_sameness_group: i.sourceSamenessGroup,
    source_type: i.sourceType,
    destination_name: i.destinationName,
    destination_namespace: i.destinationNamespace,
    destination_partition: i.destinationPartition,
    action: i.action,
    permissions: JSON.stringify(i.permissions),
    precedence: i.precedence,
    description: i.description,
    meta: i.meta,
  }));
}
