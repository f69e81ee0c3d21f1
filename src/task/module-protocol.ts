import type { ServiceInstance } from "../consul/types.ts";

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
