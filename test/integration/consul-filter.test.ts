import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { startConsul, type ConsulAgent } from "../support/consul.ts";
import { readFromSnapshot } from "../../src/synth/snapshot.ts";
import { normalizeServicesQuery } from "../../src/consul/query.ts";
import { parseFilter } from "../../src/consul/filter.ts";
import type { ServiceInstance } from "../../src/consul/types.ts";

/**
 * The offline filter evaluator against a real Consul: generated instances (tags, meta, ports,
 * addresses, node meta, check status) are registered in a real agent, generated filters are sent
 * with the request the daemon would make (passing dropped when the filter reads Checks.Status),
 * and the ids Consul returns must be the ids `Testing`/`cts synth --input` select.
 * Rerun one failure with CTS_FILTER_SEED=<seed printed below>.
 */

const CASES = 120;
const SEED = Number(process.env.CTS_FILTER_SEED ?? Math.floor(Math.random() * 2 ** 31));

/** mulberry32: a small seeded generator, so a failing seed replays exactly. */
function random(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (n: number) => Math.floor(next() * n);
  const pick = <T>(list: readonly T[]): T => list[int(list.length)]!;
  const some = <T>(list: readonly T[]): T[] => list.filter(() => next() < 0.4);
  return { next, int, pick, some };
}
type Random = ReturnType<typeof random>;

const TAGS = ["prod", "dev", "a", "b-c", "x.y", "Prod"] as const;
const META_KEYS = ["env", "zone", "v"] as const;
const META_VALUES = ["prod", "dev", "", "p", "x y", "prod-2", 'q"uote', "é\\"] as const;
const PORTS = [0, 80, 443, 8080] as const;
const ADDRESSES = ["", "10.0.0.1", "10.0.0.2"] as const;
const NODE_META = ["rack", "az"] as const;
const NODE_META_VALUES = ["r1", "r2", ""] as const;
const TAGGED = ["lan", "wan"] as const;
const KINDS = ["", "", "connect-proxy"] as const;
const STATUSES = ["passing", "passing", "warning", "critical"] as const;
const PATTERNS = ["^p", "d", "^$", "o.?d", "[0-9]", "(?i)^PROD", "x y$"] as const;

type Instance = Partial<ServiceInstance> & { name: string; id: string; node: string };

function instancesFor(r: Random, service: string, caseNo: number): Instance[] {
  const nodes = Array.from({ length: 1 + r.int(3) }, (_, k) => ({
    node: `c${caseNo}-n${k}`,
    nodeAddress: `127.0.${caseNo % 250}.${k + 1}`,
    nodeMeta: Object.fromEntries(r.some(NODE_META).map((k2) => [k2, r.pick(NODE_META_VALUES)])),
    nodeTaggedAddresses: Object.fromEntries(r.some(TAGGED).map((k2) => [k2, `10.9.${caseNo % 250}.${k}`])),
  }));
  return Array.from({ length: 1 + r.int(5) }, (_, i) => {
    const node = r.pick(nodes);
    const kind = r.pick(KINDS);
    return {
      kind,
      name: service,
      id: `i${i}`,
      tags: r.some(TAGS),
      meta: Object.fromEntries(r.some(META_KEYS).map((k) => [k, r.pick(META_VALUES)])),
      // Consul refuses a connect-proxy without a port.
      port: kind ? r.pick(PORTS.slice(1)) : r.pick(PORTS),
      address: r.pick(ADDRESSES),
      node: node.node,
      nodeAddress: node.nodeAddress,
      nodeMeta: node.nodeMeta,
      nodeTaggedAddresses: node.nodeTaggedAddresses,
      nodeDatacenter: "dc1",
      status: r.pick(STATUSES),
    };
  });
}

/** A double-quoted string literal with Go's escapes (JSON's are Go's). */
const q = (s: string) => JSON.stringify(s);
/**
 * A string literal, double-quoted or raw in backticks. bexpr ends a double-quoted string at the
 * first `"` (an escaped quote is a syntax error in Consul), so a value holding one is mostly
 * written in backticks, and sometimes double-quoted: then Consul and cts must both refuse it.
 */
const literal = (r: Random, s: string) => (s.includes('"') ? (r.next() < 0.8 ? "`" + s + "`" : q(s)) : r.next() < 0.7 ? q(s) : "`" + s + "`");

function atom(r: Random, instances: Instance[]): string {
  const tag = r.pick(TAGS);
  const key = r.pick(META_KEYS);
  const value = r.pick(META_VALUES);
  const choices: Array<() => string> = [
    () => r.pick([`Service.Tags contains ${q(tag)}`, `${q(tag)} in Service.Tags`, `Service.Tags not contains ${q(tag)}`, `${q(tag)} not in Service.Tags`]),
    () => r.pick(["Service.Tags is empty", "Service.Tags is not empty", "Service.Meta is empty", "Node.Meta is not empty"]),
    () => `Service.Meta.${key} ${r.pick(["==", "!="])} ${literal(r, value)}`,
    () => `Service.Meta.${key} ${r.pick(["contains", "not contains"])} ${q(r.pick(["p", "ro", " ", "-"]))}`,
    () => `Service.Meta.${key} ${r.pick(["matches", "not matches"])} ${q(r.pick(PATTERNS))}`,
    () => r.pick([`${key} in Service.Meta`, `${q(key)} not in Service.Meta`, `Service.Meta[${q(key)}] == ${q(value)}`]),
    () => `Service.Port ${r.pick(["==", "!="])} ${r.pick(PORTS)}`,
    () => `Service.Address ${r.pick(["==", "!="])} ${q(r.pick(ADDRESSES))}`,
    () => r.pick([`Service.ID == ${q(r.pick(instances).id)}`, `Service.ID matches "^i[0-2]$"`, `"1" in Service.ID`]),
    () => `Node.Node == ${q(r.pick(instances).node)}`,
    () => `Node.Meta.${r.pick(NODE_META)} ${r.pick(["==", "!="])} ${q(r.pick(NODE_META_VALUES))}`,
    () => r.pick([`Node.TaggedAddresses is empty`, `lan in Node.TaggedAddresses`, `Node.TaggedAddresses.wan contains ".9."`]),
    () => `Service.Kind ${r.pick(["==", "!="])} ${q(r.pick(KINDS))}`,
    () => r.pick(["Node.Datacenter == dc1", "Node.Address matches \"\\\\.1$\"", "Service.Service == `" + instances[0]!.name + "`"]),
    () => `Checks.Status ${r.pick(["==", "!="])} ${q(r.pick(["passing", "warning", "critical"]))}`,
  ];
  return r.pick(choices)();
}

function filterFor(r: Random, instances: Instance[], depth = 0): string {
  const roll = r.next();
  if (depth >= 2 || roll < 0.4) return atom(r, instances);
  if (roll < 0.55) return `not ${filterFor(r, instances, depth + 1)}`;
  const op = r.pick(["and", "or"]);
  const left = filterFor(r, instances, depth + 1);
  const right = filterFor(r, instances, depth + 1);
  return r.next() < 0.5 ? `(${left}) ${op} (${right})` : `${left} ${op} ${right}`;
}

describe("the offline Consul filter evaluator against a real Consul agent", () => {
  let consul: ConsulAgent;
  before(async () => {
    consul = await startConsul();
  });
  after(async () => {
    await consul?.stop();
  });

  it(`selects the instances Consul returns, for ${CASES} generated catalogs and filters (seed ${SEED})`, async (t) => {
    t.diagnostic(`seed ${SEED} (replay: CTS_FILTER_SEED=${SEED})`);
    const r = random(SEED);
    const cases = Array.from({ length: CASES }, (_, c) => {
      const service = `f${c}`;
      const instances = instancesFor(r, service, c);
      return { service, instances, filter: filterFor(r, instances), passingOnly: r.next() < 0.5 };
    });
    // One node holds one set of node meta: every registration of a node repeats it.
    const registrations = cases.flatMap(({ instances }) =>
      instances.map((i) => ({
        Node: i.node,
        Address: i.nodeAddress,
        NodeMeta: i.nodeMeta,
        TaggedAddresses: i.nodeTaggedAddresses,
        Service: { Kind: i.kind, ID: i.id, Service: i.name, Tags: i.tags, Meta: i.meta, Port: i.port, Address: i.address, ...(i.kind ? { Proxy: { DestinationServiceName: "upstream" } } : {}) },
        Check: { CheckID: `service:${i.id}`, Name: "probe", Status: i.status, ServiceID: i.id },
      })),
    );
    for (let k = 0; k < registrations.length; k += 16) await Promise.all(registrations.slice(k, k + 16).map((reg) => consul.api("PUT", "/v1/catalog/register", reg)));

    const mismatches: string[] = [];
    let nonTrivial = 0;
    let refused = 0;
    for (const { service, instances, filter, passingOnly } of cases) {
      const query = { names: [service], filter, passingOnly };
      const { health } = normalizeServicesQuery(query);
      const params = new URLSearchParams({ filter, ...(health.passing ? { passing: "1" } : {}) });
      const res = await fetch(`${consul.url}/v1/health/service/${service}?${params}`);
      const body = await res.text();
      if (res.status !== 200) {
        // A filter Consul refuses must be refused by cts as well, never evaluated.
        refused++;
        assert.throws(() => parseFilter(filter), (e: any) => e.code === "FILTER_UNSUPPORTED", `Consul refused ${filter} (${body.trim()}) but cts evaluates it (seed ${SEED})`);
        continue;
      }
      const fromConsul = (JSON.parse(body) as Array<{ Service: { ID: string } }>).map((e) => e.Service.ID).sort();
      const offline = (readFromSnapshot({ services: instances }, { kind: "services", query }) as ServiceInstance[]).map((i) => i.id).sort();
      if (fromConsul.length > 0 && fromConsul.length < instances.length) nonTrivial++;
      if (JSON.stringify(fromConsul) !== JSON.stringify(offline))
        mismatches.push(`${service} passing=${health.passing} filter ${filter}\n  Consul: ${fromConsul.join(",")}\n  cts:    ${offline.join(",")}\n  instances: ${JSON.stringify(instances)}`);
    }
    assert.deepEqual(mismatches, [], `seed ${SEED}: ${mismatches.length} of ${CASES} differ:\n${mismatches.slice(0, 5).join("\n")}`);
    // The generator must exercise selection, not only all-or-nothing answers.
    t.diagnostic(`${nonTrivial} cases selected a proper subset; ${refused} filters refused by both`);
    assert.ok(refused <= CASES / 10, `${refused} of ${CASES} generated filters were refused: the generator should mostly write valid ones (seed ${SEED})`);
    assert.ok(nonTrivial >= CASES / 10, `only ${nonTrivial} of ${CASES} cases selected a proper subset (seed ${SEED})`);
  });
});
