import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { startConsul, type ConsulAgent } from "../support/consul.ts";
import { readFromSnapshot } from "../../src/synth/snapshot.ts";
import { normalizeServicesQuery } from "../../src/consul/query.ts";
import { parseFilter } from "../../src/consul/filter.ts";
import type { ServiceInstance } from "../../src/consul/types.ts";
import { filterEntryOf, nodeChecksOf, type CheckInput, type InstanceInput } from "../../src/synth/snapshot.ts";

/**
 * The offline filter evaluator against a real Consul: generated instances (tags, meta, ports,
 * addresses, node meta, several service checks, node checks — serfHealth passing or not, another
 * node check —, node and service maintenance) are registered in a real agent, generated filters
 * are sent with the request the daemon would make (passing dropped when the filter reads
 * Checks.Status), and the ids Consul returns must be the ids `Testing`/`cts synth --input` select.
 * A second test does the same on the agent's own node with TTL checks and the agent's
 * maintenance endpoints, and checks that Testing's checks are the ones Consul lists.
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
const NODE_STATUSES = ["passing", "passing", "passing", "critical", "warning"] as const;
const CHECK_NAMES = [undefined, undefined, "HTTP", "tcp probe"] as const;
const PATTERNS = ["^p", "d", "^$", "o.?d", "[0-9]", "(?i)^PROD", "x y$"] as const;

type Instance = InstanceInput & { id: string; node: string };

/** Service checks of an instance: none to three, ids as the agent gives them, or of their own. */
function serviceChecks(r: Random, id: string): CheckInput[] {
  const n = r.pick([0, 1, 1, 1, 2, 3]);
  return Array.from({ length: n }, (_, k) => ({
    ...(r.next() < 0.2 ? { id: `http-${id}-${k}` } : {}),
    ...(r.next() < 0.5 ? { name: r.pick(CHECK_NAMES) } : {}),
    status: r.pick(STATUSES),
  })).map((c) => (c.name === undefined ? (({ name: _, ...rest }) => rest)(c) : c));
}

function instancesFor(r: Random, service: string, caseNo: number): Instance[] {
  const nodes = Array.from({ length: 1 + r.int(3) }, (_, k) => {
    const roll = r.next();
    return {
      node: `c${caseNo}-n${k}`,
      nodeAddress: `127.0.${caseNo % 250}.${k + 1}`,
      nodeMeta: Object.fromEntries(r.some(NODE_META).map((k2) => [k2, r.pick(NODE_META_VALUES)])),
      nodeTaggedAddresses: Object.fromEntries(r.some(TAGGED).map((k2) => [k2, `10.9.${caseNo % 250}.${k}`])),
      // The node's checks as a test states them: the default serfHealth, its status, or a list.
      health:
        roll < 0.4
          ? {}
          : roll < 0.7
            ? { nodeStatus: r.pick(NODE_STATUSES) }
            : { nodeChecks: [{ id: "serfHealth", status: r.pick(NODE_STATUSES) }, ...(r.next() < 0.6 ? [{ id: "disk", name: r.pick(["disk", "HTTP"]), status: r.pick(STATUSES) }] : [])] as CheckInput[] },
      maintenance: r.next() < 0.12,
    };
  });
  const stated = new Set<string>();
  return Array.from({ length: 1 + r.int(5) }, (_, i) => {
    const node = r.pick(nodes);
    const kind = r.pick(KINDS);
    const id = `i${i}`;
    // A node's checks are stated on one of its instances (Testing gives them to all).
    const nodeHealth = stated.has(node.node) ? {} : { ...node.health, ...(node.maintenance ? { nodeMaintenance: true } : {}) };
    stated.add(node.node);
    return {
      kind,
      name: service,
      id,
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
      checks: serviceChecks(r, id),
      ...(r.next() < 0.12 ? { maintenance: true } : {}),
      ...nodeHealth,
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
    () => r.pick([`Node.ID == ""`, `Node.ID != ""`, `Node.ID matches "-"`]),
    () => `Node.Meta.${r.pick(NODE_META)} ${r.pick(["==", "!="])} ${q(r.pick(NODE_META_VALUES))}`,
    () => r.pick([`Node.TaggedAddresses is empty`, `lan in Node.TaggedAddresses`, `Node.TaggedAddresses.wan contains ".9."`]),
    () => `Service.Kind ${r.pick(["==", "!="])} ${q(r.pick(KINDS))}`,
    () => r.pick(["Node.Datacenter == dc1", "Node.Address matches \"\\\\.1$\"", "Service.Service == `" + instances[0]!.name + "`"]),
    () => `Checks.Status ${r.pick(["==", "!="])} ${q(r.pick(["passing", "warning", "critical"]))}`,
    () => `Checks.Status ${r.pick(["==", "!="])} ${q(r.pick(["passing", "warning", "critical"]))}`,
    () => {
      const i = r.pick(instances);
      return `Checks.CheckID ${r.pick(["==", "!="])} ${q(r.pick(["serfHealth", "_node_maintenance", `_service_maintenance:${i.id}`, `service:${i.id}`, `service:${i.id}:2`, "disk", `http-${i.id}-0`]))}`;
    },
    () => r.pick([`Checks.CheckID matches "^service:"`, `Checks.CheckID contains "maint"`, `"_node" in Checks.CheckID`, `Checks.CheckID not matches "^_"`]),
    () => `Checks.Name ${r.pick(["==", "!=", "contains"])} ${q(r.pick(["Serf Health Status", "HTTP", "tcp probe", "disk", `Service '${instances[0]!.name}' check`, "Maintenance", "check"]))}`,
    () => `Checks.ServiceID ${r.pick(["==", "!="])} ${q(r.pick(["", r.pick(instances).id]))}`,
    () => `Checks.ServiceName ${r.pick(["==", "!="])} ${q(r.pick(["", instances[0]!.name]))}`,
    () => `Checks.Node == ${q(r.pick(instances).node)}`,
    () => r.pick(["Checks is empty", "Checks is not empty"]),
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

/**
 * What Consul's `/v1/health/service/<service>?filter=…` (with `?passing` as the daemon sends it)
 * and the offline evaluator select: "refused" when Consul refuses the filter (cts must too), a
 * message when they differ, else how many Consul selected.
 */
async function compare(consul: ConsulAgent, service: string, instances: Instance[], filter: string, passingOnly: boolean): Promise<"refused" | string | { selected: number }> {
  const query = { names: [service], filter, passingOnly };
  const { health } = normalizeServicesQuery(query);
  const params = new URLSearchParams({ filter, ...(health.passing ? { passing: "1" } : {}) });
  const res = await fetch(`${consul.url}/v1/health/service/${service}?${params}`);
  const body = await res.text();
  if (res.status !== 200) {
    assert.throws(() => parseFilter(filter), (e: any) => e.code === "FILTER_UNSUPPORTED", `Consul refused ${filter} (${body.trim()}) but cts evaluates it (seed ${SEED})`);
    return "refused";
  }
  const fromConsul = (JSON.parse(body) as Array<{ Service: { ID: string } }>).map((e) => e.Service.ID).sort();
  const offline = (readFromSnapshot({ services: instances }, { kind: "services", query }) as ServiceInstance[]).map((i) => i.id).sort();
  if (JSON.stringify(fromConsul) !== JSON.stringify(offline))
    return `${service} passing=${health.passing} filter ${filter}\n  Consul: ${fromConsul.join(",")}\n  cts:    ${offline.join(",")}\n  instances: ${JSON.stringify(instances)}`;
  return { selected: fromConsul.length };
}

type ListedCheck = { Node: string; CheckID: string; Name: string; Status: string; ServiceID: string; ServiceName: string };
const listed = (checks: ListedCheck[]) =>
  checks.map(({ Node, CheckID, Name, Status, ServiceID, ServiceName }) => ({ Node, CheckID, Name, Status, ServiceID, ServiceName })).sort((a, b) => (a.CheckID < b.CheckID ? -1 : a.CheckID > b.CheckID ? 1 : 0));

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
    // One node holds one set of node meta: every registration of a node repeats it. The checks
    // registered are those Testing gives the instance (node checks, maintenance checks included),
    // so this test compares the filter's semantics; the agent test below checks the checks.
    const registrations = cases.flatMap(({ instances }) => {
      const nodeChecks = nodeChecksOf(instances);
      return instances.map((i) => ({
        Node: i.node,
        Address: i.nodeAddress,
        NodeMeta: i.nodeMeta,
        TaggedAddresses: i.nodeTaggedAddresses,
        Service: { Kind: i.kind, ID: i.id, Service: i.name, Tags: i.tags, Meta: i.meta, Port: i.port, Address: i.address, ...(i.kind ? { Proxy: { DestinationServiceName: "upstream" } } : {}) },
        Checks: filterEntryOf(i, nodeChecks).Checks.map((c) => ({ CheckID: c.CheckID, Name: c.Name, Status: c.Status, ...(c.ServiceID ? { ServiceID: c.ServiceID } : {}) })),
      }));
    });
    for (let k = 0; k < registrations.length; k += 16) await Promise.all(registrations.slice(k, k + 16).map((reg) => consul.api("PUT", "/v1/catalog/register", reg)));

    const mismatches: string[] = [];
    let nonTrivial = 0;
    let refused = 0;
    for (const { service, instances, filter, passingOnly } of cases) {
      const outcome = await compare(consul, service, instances, filter, passingOnly);
      if (outcome === "refused") refused++;
      else if (typeof outcome === "string") mismatches.push(outcome);
      else if (outcome.selected > 0 && outcome.selected < instances.length) nonTrivial++;
    }
    assert.deepEqual(mismatches, [], `seed ${SEED}: ${mismatches.length} of ${CASES} differ:\n${mismatches.slice(0, 5).join("\n")}`);
    // The generator must exercise selection, not only all-or-nothing answers.
    t.diagnostic(`${nonTrivial} cases selected a proper subset; ${refused} filters refused by both`);
    assert.ok(refused <= CASES / 10, `${refused} of ${CASES} generated filters were refused: the generator should mostly write valid ones (seed ${SEED})`);
    assert.ok(nonTrivial >= CASES / 10, `only ${nonTrivial} of ${CASES} cases selected a proper subset (seed ${SEED})`);
  });
  it(`gives instances on the agent's node the checks Consul lists: TTL checks, service and node maintenance (seed ${SEED})`, async (t) => {
    const r = random(SEED ^ 0x2c1b3c6d);
    const node = (await consul.api("GET", "/v1/agent/self")).Config.NodeName as string;
    // The agent's node as the catalog holds it (its tagged addresses and meta are Consul's own).
    const held = (await consul.api("GET", `/v1/catalog/node/${node}`)).Node;
    const onNode = { node, nodeId: held.ID, nodeAddress: held.Address, nodeDatacenter: held.Datacenter, nodeMeta: held.Meta ?? {}, nodeTaggedAddresses: held.TaggedAddresses ?? {} };
    const service = "agent-svc";
    const plan = Array.from({ length: 5 }, (_, i) => ({ id: `a${i}`, names: Array.from({ length: 1 + r.int(3) }, () => r.pick(CHECK_NAMES)), tags: r.some(TAGS) }));
    for (const p of plan) await consul.api("PUT", "/v1/agent/service/register", { ID: p.id, Name: service, Tags: p.tags, Checks: p.names.map((name) => ({ TTL: "30m", ...(name ? { Name: name } : {}) })) });
    const mismatches: string[] = [];
    for (let round = 0; round < 4; round++) {
      const nodeMaintenance = round % 2 === 1;
      const instances: Instance[] = plan.map((p) => ({
        name: service,
        id: p.id,
        ...onNode,
        tags: p.tags,
        checks: p.names.map((name) => ({ ...(name ? { name } : {}), status: r.pick(STATUSES) })),
        ...(r.next() < 0.3 ? { maintenance: true } : {}),
        ...(nodeMaintenance ? { nodeMaintenance: true } : {}),
      }));
      for (const i of instances) {
        // The agent's ids for a service's checks: service:<id>, or service:<id>:<n> for several.
        const ids = i.checks!.length === 1 ? [`service:${i.id}`] : i.checks!.map((_, k) => `service:${i.id}:${k + 1}`);
        for (const [k, c] of i.checks!.entries()) await consul.api("PUT", `/v1/agent/check/update/${ids[k]}`, { Status: c.status });
        await consul.api("PUT", `/v1/agent/service/maintenance/${i.id}?enable=${i.maintenance === true}&reason=test`);
      }
      await consul.api("PUT", `/v1/agent/maintenance?enable=${nodeMaintenance}&reason=test`);
      // Testing's checks are the ones Consul lists (the agent syncs its checks to the catalog: wait for it).
      const nodeChecks = nodeChecksOf(instances);
      const expected = Object.fromEntries(instances.map((i) => [i.id, listed(filterEntryOf(i, nodeChecks).Checks)]));
      let actual: Record<string, ReturnType<typeof listed>> = {};
      for (let attempt = 0; attempt < 100; attempt++) {
        const entries = (await consul.api("GET", `/v1/health/service/${service}`)) as Array<{ Service: { ID: string }; Checks: ListedCheck[] }>;
        actual = Object.fromEntries(entries.map((e) => [e.Service.ID, listed(e.Checks)]));
        if (JSON.stringify(actual) === JSON.stringify(expected)) break;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      assert.deepEqual(actual, expected, `round ${round}: the checks Consul lists are not those Testing gives (seed ${SEED})`);
      for (let k = 0; k < 30; k++) {
        const filter = filterFor(r, instances);
        const outcome = await compare(consul, service, instances, filter, r.next() < 0.5);
        if (typeof outcome === "string" && outcome !== "refused") mismatches.push(`round ${round}: ${outcome}`);
      }
    }
    await consul.api("PUT", "/v1/agent/maintenance?enable=false");
    t.diagnostic(`4 rounds of 30 filters on ${plan.length} instances with ${plan.reduce((n, p) => n + p.names.length, 0)} TTL checks`);
    assert.deepEqual(mismatches, [], `seed ${SEED}: ${mismatches.length} differ:\n${mismatches.slice(0, 5).join("\n")}`);
  });
});
