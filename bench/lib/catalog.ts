import type { ServiceInstance } from "../../src/consul/types.ts";
import type { ConsulAgent } from "../../test/support/consul.ts";

/** One service instance to put into the catalog directly (no agent, no checks: it counts as passing). */
export interface CatalogInstance {
  node: string;
  service: string;
  id: string;
  address: string;
  port: number;
  tags?: string[];
  meta?: Record<string, string>;
}

/** Consul refuses transactions with more operations than this (agent/txn_endpoint.go). */
const TXN_MAX_OPS = 128;

async function pool<T>(items: T[], concurrency: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      await fn(items[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, worker));
}

function chunks<T>(items: T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

/**
 * Registers many instances through `PUT /v1/txn` (128 catalog operations per transaction, a few
 * transactions in flight): one Raft write per transaction instead of one per instance. Nodes are
 * created first. Returns the wall time in ms.
 */
export async function registerInstances(consul: ConsulAgent, instances: CatalogInstance[], concurrency = 4): Promise<number> {
  const start = performance.now();
  const nodes = [...new Set(instances.map((i) => i.node))];
  await pool(chunks(nodes, TXN_MAX_OPS), concurrency, (batch) =>
    consul.api(
      "PUT",
      "/v1/txn",
      batch.map((node) => ({ Node: { Verb: "set", Node: { Node: node, Address: addressOf(node) } } })),
    ),
  );
  await pool(chunks(instances, TXN_MAX_OPS), concurrency, (batch) =>
    consul.api(
      "PUT",
      "/v1/txn",
      batch.map((i) => ({
        Service: { Verb: "set", Node: i.node, Service: { ID: i.id, Service: i.service, Address: i.address, Port: i.port, Tags: i.tags ?? [], Meta: i.meta ?? {} } },
      })),
    ),
  );
  return performance.now() - start;
}

/** Removes instances registered with registerInstances. */
export async function deregisterInstances(consul: ConsulAgent, instances: CatalogInstance[], concurrency = 4): Promise<void> {
  await pool(chunks(instances, TXN_MAX_OPS), concurrency, (batch) =>
    consul.api(
      "PUT",
      "/v1/txn",
      batch.map((i) => ({ Service: { Verb: "delete", Node: i.node, Service: { ID: i.id } } })),
    ),
  );
}

/** Registers one instance with `PUT /v1/catalog/register` (the single-write path). */
export function catalogRegister(consul: ConsulAgent, i: CatalogInstance): Promise<unknown> {
  return consul.api("PUT", "/v1/catalog/register", {
    Node: i.node,
    Address: addressOf(i.node),
    Service: { ID: i.id, Service: i.service, Address: i.address, Port: i.port, Tags: i.tags ?? [], Meta: i.meta ?? {} },
  });
}

/** A stable fake address per node name (10.x.y.z). */
export function addressOf(node: string): string {
  let h = 0;
  for (const ch of node) h = (h * 31 + ch.charCodeAt(0)) >>> 0;
  return `10.${(h >>> 16) & 255}.${(h >>> 8) & 255}.${h & 255}`;
}

/** `count` instances of `service`, spread over `nodes` nodes. */
export function instancesOf(service: string, count: number, opts: { nodes?: number; prefix?: string; startPort?: number } = {}): CatalogInstance[] {
  const nodes = opts.nodes ?? Math.max(1, Math.min(count, 100));
  return Array.from({ length: count }, (_, i) => {
    const node = `${opts.prefix ?? "bench-node"}-${String(i % nodes).padStart(4, "0")}`;
    return { node, service, id: `${service}-${i}`, address: addressOf(`${node}/${i}`), port: (opts.startPort ?? 20000) + (i % 20000), tags: ["bench", `v${i % 3}`], meta: { version: String(i % 5) } };
  });
}

/** n instances as Consul would deliver them (converted), spread over 50 nodes. */
export function syntheticInstances(n: number, service = "syn"): ServiceInstance[] {
  return Array.from({ length: n }, (_, i) => {
    const node = `node-${String(i % 50).padStart(3, "0")}`;
    return {
      id: `${service}-${i}`,
      name: service,
      kind: "",
      address: addressOf(`${node}/${i}`),
      port: 20000 + i,
      meta: { version: String(i % 5), team: "bench" },
      tags: ["bench", `v${i % 3}`],
      namespace: "",
      status: "passing",
      node,
      nodeId: `00000000-0000-0000-0000-${String(i % 50).padStart(12, "0")}`,
      nodeAddress: addressOf(node),
      nodeDatacenter: "dc1",
      nodeTaggedAddresses: { lan: addressOf(node), wan: addressOf(node) },
      nodeMeta: { "consul-network-segment": "" },
      ctsUserDefinedMeta: {},
    };
  });
}
