import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createConsulClient } from "../../src/consul/client.ts";
import { createCatalogReader } from "../../src/consul/reader.ts";
import { configEntries, intentions, nodes, services } from "../../src/task/conditions.ts";
import { taskProblems } from "../../src/task/validate.ts";
import { ModuleTask } from "../../src/task/module-task.ts";
import { Task, type TaskInput, type TaskScope } from "../../src/task/task.ts";
import type { IntentionsCondition, NodesCondition, TaskInputs } from "../../src/task/conditions.ts";
import { Testing } from "../../src/testing.ts";
import { readCtsConfig } from "../../src/cts/config/load.ts";
import type { Source, SourceData } from "../../src/consul/types.ts";
import { readFromSnapshot, readSnapshot } from "../../src/synth/snapshot.ts";
import { parseTask } from "../../src/api/task-request.ts";
import { taskFromHcl } from "../../src/cli/task-file.ts";

/**
 * A stand-in for the agent's HTTP API (unit level: the queries cts sends and how it reads the
 * answers; test/integration/consul-peering.test.ts and consul-mesh-sources.test.ts use real agents).
 */
describe("peers, partitions, sameness groups, nodes, intentions and config entries: what cts asks Consul", () => {
  let server: Server;
  let address = "";
  const seen: URL[] = [];
  let reply: (url: URL) => { status: number; body: string } = () => ({ status: 200, body: "[]" });
  before(async () => {
    server = createServer((req, res) => {
      const url = new URL(req.url ?? "/", "http://x");
      seen.push(url);
      const r = reply(url);
      res.writeHead(r.status, { "content-type": "application/json", "x-consul-index": "42" });
      res.end(r.body);
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    address = `127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => new Promise<void>((r) => server.close(() => r())));

  async function read<S extends Source>(source: S): Promise<SourceData<S>> {
    const api = createConsulClient({ address, token: "t" });
    try {
      return await createCatalogReader(api).read(source);
    } finally {
      api.close();
    }
  }

  it("asks for a peer's instances with ?peer= and tells each instance's peer", async () => {
    reply = () => ({
      status: 200,
      body: JSON.stringify([{ Node: { Node: "n1", Address: "10.0.0.1", PeerName: "east" }, Service: { ID: "web-1", Service: "web", Port: 80, PeerName: "east" }, Checks: [] }]),
    });
    const got = await read(services({ names: ["web"], peer: "east" }));
    const url = seen.at(-1)!;
    assert.equal(url.pathname, "/v1/health/service/web");
    assert.equal(url.searchParams.get("peer"), "east");
    assert.equal(url.searchParams.get("passing"), "true");
    assert.equal(got[0]!.peer, "east");
  });

  it("passes partition as ?partition= and a sameness group as ?sameness-group= (Consul Enterprise: not provable here)", async () => {
    reply = () => ({ status: 200, body: "[]" });
    await read(services({ names: ["web"], partition: "finance", samenessGroup: "prod", datacenter: "dc2" }));
    const url = seen.at(-1)!;
    assert.equal(url.searchParams.get("partition"), "finance");
    assert.equal(url.searchParams.get("sameness-group"), "prod");
    assert.equal(url.searchParams.get("dc"), "dc2");
    assert.equal(url.searchParams.get("peer"), null);
  });

  it("leaves peer, partition and sameness group out of a local query, and local instances without a peer field", async () => {
    reply = () => ({ status: 200, body: JSON.stringify([{ Node: { Node: "n1", Address: "10.0.0.1" }, Service: { ID: "web-1", Service: "web", Partition: "default" }, Checks: [] }]) });
    const [instance] = await read(services({ names: ["web"] }));
    const url = seen.at(-1)!;
    for (const p of ["peer", "partition", "sameness-group"]) assert.equal(url.searchParams.get(p), null, p);
    assert.equal("peer" in instance!, false);
    assert.equal("partition" in instance!, false);
  });

  it("refuses a regexp with a peer or a sameness group, and a peer with a sameness group, naming the fix", () => {
    const problems = (condition: ReturnType<typeof services>) =>
      taskProblems(
        new (class extends Task {
          constructor() {
            super({ name: "t", condition });
          }
          synthesize() {}
        })(),
      );
    assert.match(problems(services({ regexp: "^web", peer: "east" }))[0]!.message, /needs names, not a regexp/);
    assert.match(problems(services({ regexp: "^web", samenessGroup: "prod" }))[0]!.message, /needs names/);
    assert.match(problems(services({ names: ["web"], peer: "east", samenessGroup: "prod" }))[0]!.message, /use one of them/);
    assert.match(problems(services({ names: ["web"], peer: "" }))[0]!.message, /non-empty string/);
  });

  it("lists nodes with filter, node meta (one parameter per pair) and datacenter, sorted by name", async () => {
    reply = () => ({
      status: 200,
      body: JSON.stringify([
        { ID: "b", Node: "zeta", Address: "10.0.0.2", Datacenter: "dc2", Meta: { role: "edge" }, CreateIndex: 5 },
        { ID: "a", Node: "alpha", Address: "10.0.0.1", Datacenter: "dc2", TaggedAddresses: { lan: "10.0.0.1" }, Meta: null },
      ]),
    });
    const got = await read(nodes({ datacenter: "dc2", filter: 'Meta.role == "edge"', nodeMeta: { zone: "a", rack: "1" } }));
    const url = seen.at(-1)!;
    assert.equal(url.pathname, "/v1/catalog/nodes");
    assert.equal(url.searchParams.get("filter"), 'Meta.role == "edge"');
    assert.deepEqual(url.searchParams.getAll("node-meta"), ["rack:1", "zone:a"]);
    assert.equal(url.searchParams.get("dc"), "dc2");
    assert.deepEqual(got, [
      { id: "a", node: "alpha", address: "10.0.0.1", datacenter: "dc2", taggedAddresses: { lan: "10.0.0.1" }, meta: {} },
      { id: "b", node: "zeta", address: "10.0.0.2", datacenter: "dc2", taggedAddresses: {}, meta: { role: "edge" } },
    ]);
  });

  it("reads one destination's intentions from the match endpoint, in Consul's order, and every intention from the list", async () => {
    const raw = [
      { SourceName: "web", SourceNS: "default", DestinationName: "db", DestinationNS: "default", SourceType: "consul", Action: "allow", Precedence: 9 },
      { SourceName: "*", SourceNS: "default", DestinationName: "*", DestinationNS: "default", SourceType: "consul", Action: "deny", Precedence: 5, Meta: { by: "ops" } },
    ];
    reply = (url) => ({ status: 200, body: JSON.stringify(url.pathname.endsWith("/match") ? { db: raw } : raw) });
    const one = await read(intentions({ destination: "db", partition: "p" }));
    let url = seen.at(-1)!;
    assert.equal(url.pathname, "/v1/connect/intentions/match");
    assert.equal(url.searchParams.get("by"), "destination");
    assert.equal(url.searchParams.get("name"), "db");
    assert.equal(url.searchParams.get("partition"), "p");
    assert.deepEqual(
      one.map((i) => [i.sourceName, i.destinationName, i.action, i.precedence]),
      [
        ["web", "db", "allow", 9],
        ["*", "*", "deny", 5],
      ],
    );
    assert.deepEqual(one[1]!.meta, { by: "ops" });
    assert.deepEqual(one[0]!.permissions, []);
    const all = await read(intentions());
    url = seen.at(-1)!;
    assert.equal(url.pathname, "/v1/connect/intentions");
    assert.equal(all.length, 2);
  });

  it("reads config entries by kind or by kind and name, without Consul's bookkeeping; a missing entry is none", async () => {
    reply = (url) =>
      url.pathname === "/v1/config/service-defaults/gone"
        ? { status: 404, body: "Config entry not found" }
        : {
            status: 200,
            body: url.pathname.endsWith("/web")
              ? '{"Kind":"service-defaults","Name":"web","Protocol":"http","Hash":10390824933679613299,"CreateIndex":3,"ModifyIndex":4}'
              : '[{"Name":"b","Kind":"service-defaults","Protocol":"tcp"},{"Kind":"service-defaults","Name":"a","Protocol":"http"}]',
          };
    assert.deepEqual(await read(configEntries({ kind: "service-defaults", name: "web" })), [{ Kind: "service-defaults", Name: "web", Protocol: "http" }]);
    assert.equal(seen.at(-1)!.pathname, "/v1/config/service-defaults/web");
    assert.deepEqual(
      (await read(configEntries({ kind: "service-defaults" }))).map((e) => e.Name),
      ["a", "b"],
    );
    assert.deepEqual(await read(configEntries({ kind: "service-defaults", name: "gone" })), []);
  });

  it("refuses a config entry kind that is not spelled as Consul spells kinds", () => {
    const [problem] = taskProblems(
      new ModuleTask({ name: "t", module: "./m", condition: configEntries({ kind: "Service Defaults" }) }),
    );
    assert.match(`${problem!.field} ${problem!.message}`, /condition\.kind .* is not a config entry kind/);
  });
});

describe("nodes, intentions and config entries as task input", () => {
  it("passes a module `nodes`, `intentions` (permissions as JSON text) and `config_entries`, as literal text", () => {
    const task = new ModuleTask<IntentionsCondition, TaskInputs>({
      name: "fw",
      module: "./m",
      condition: intentions({ destination: "db" }),
      inputs: { nodes: nodes(), configEntries: configEntries({ kind: "service-defaults" }) },
    });
    const json = task.terraformJson({
      intentions: [
        {
          sourceName: "${evil}",
          sourceNamespace: "default",
          sourcePartition: "",
          sourcePeer: "east",
          sourceSamenessGroup: "",
          sourceType: "consul",
          destinationName: "db",
          destinationNamespace: "default",
          destinationPartition: "",
          action: "",
          permissions: [{ Action: "allow", HTTP: { PathPrefix: "/api" } }],
          precedence: 9,
          description: "",
          meta: {},
        },
      ],
      nodes: [{ id: "a", node: "n1", address: "10.0.0.1", datacenter: "dc1", taggedAddresses: {}, meta: { x: "%{y}" } }],
      configEntries: [{ Kind: "service-defaults", Name: "web", Protocol: "${x}" }],
    });
    const args = json.module.fw;
    assert.equal(args.intentions[0].source_name, "$${evil}");
    assert.equal(args.intentions[0].source_peer, "east");
    assert.deepEqual(JSON.parse(args.intentions[0].permissions), [{ Action: "allow", HTTP: { PathPrefix: "/api" } }]);
    assert.deepEqual(args.nodes, [{ id: "a", node: "n1", address: "10.0.0.1", datacenter: "dc1", partition: "", tagged_addresses: {}, meta: { x: "%%{y}" } }]);
    assert.deepEqual(args.config_entries, [{ Kind: "service-defaults", Name: "web", Protocol: "$${x}" }]);
    assert.deepEqual(args.services, {});
  });

  it("gives a task class typed input: Testing selects a destination's intentions (wildcards included, by precedence) and a kind's config entries", () => {
    class Firewall extends Task<IntentionsCondition, { configEntries: ReturnType<typeof configEntries> }> {
      seen: TaskInput<IntentionsCondition, { configEntries: ReturnType<typeof configEntries> }> | undefined;
      constructor() {
        super({ name: "fw", condition: intentions({ destination: "db" }), inputs: { configEntries: configEntries({ kind: "service-defaults", name: "db" }) } });
      }
      synthesize(_scope: TaskScope, input: TaskInput<IntentionsCondition, { configEntries: ReturnType<typeof configEntries> }>) {
        this.seen = input;
      }
    }
    const input = Testing.taskInput(new Firewall(), {
      intentions: [
        { sourceName: "*", destinationName: "*", action: "deny" },
        { sourceName: "web", destinationName: "db" },
        { sourceName: "web", destinationName: "cache" },
      ],
      configEntries: [
        { Kind: "service-defaults", Name: "db", Protocol: "tcp" },
        { Kind: "service-defaults", Name: "web", Protocol: "http" },
        { Kind: "proxy-defaults", Name: "global" },
      ],
    });
    assert.deepEqual(
      input.intentions!.map((i) => `${i.sourceName}->${i.destinationName}:${i.action}`),
      ["web->db:allow", "*->*:deny"],
    );
    assert.deepEqual(input.configEntries, [{ Kind: "service-defaults", Name: "db", Protocol: "tcp" }]);
  });

  it("Testing gives a nodes condition the nodes of the instances (or the nodes given), by datacenter and node meta", () => {
    const task = new ModuleTask<NodesCondition>({ name: "n", module: "./m", condition: nodes({ nodeMeta: { role: "edge" } }) });
    const input = Testing.taskInput(task, {
      services: [
        { name: "web", node: "b", nodeAddress: "10.0.0.2", nodeMeta: { role: "edge" } },
        { name: "web", node: "a", nodeAddress: "10.0.0.1", nodeMeta: { role: "core" } },
      ],
    });
    assert.deepEqual(input.nodes, [{ id: "", node: "b", address: "10.0.0.2", datacenter: "", taggedAddresses: {}, meta: { role: "edge" } }]);
    assert.throws(() => Testing.taskInput(new ModuleTask<NodesCondition>({ name: "n", module: "./m", condition: nodes({ filter: "Node == a" }) }), { nodes: [{ node: "a" }] }), /FILTER_UNSUPPORTED|nodes filters only in Consul/);
  });
});

describe("cts synth --input: a snapshot's nodes, intentions and config entries", () => {
  let dir = "";
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), "cts-snap-mesh-"));
  });
  after(() => rm(dir, { recursive: true, force: true }));

  it("serves what each source selects, and names the field of a malformed entry", async () => {
    const file = join(dir, "snap.json");
    await writeFile(
      file,
      JSON.stringify({
        intentions: [{ sourceName: "web", destinationName: "db", action: "deny" }],
        configEntries: [{ Kind: "mesh", Name: "mesh", TransparentProxy: { MeshDestinationsOnly: true } }],
        nodes: [{ node: "n1", meta: { role: "edge" } }],
      }),
    );
    const snap = readSnapshot(file);
    assert.deepEqual((readFromSnapshot(snap, intentions({ destination: "db" })) as { action: string }[]).map((i) => i.action), ["deny"]);
    assert.deepEqual(readFromSnapshot(snap, configEntries({ kind: "mesh" })), [{ Kind: "mesh", Name: "mesh", TransparentProxy: { MeshDestinationsOnly: true } }]);
    assert.deepEqual((readFromSnapshot(snap, nodes({ nodeMeta: { role: "edge" } })) as { node: string }[]).map((n) => n.node), ["n1"]);
    await writeFile(file, JSON.stringify({ intentions: [{ sourceName: "web" }] }));
    assert.throws(() => readSnapshot(file), (e: Error & { code?: string }) => e.code === "INPUT_INVALID" && /intentions\[0\] must be/.test(e.message));
  });
});

describe("CTS HCL: cts's own peer, partition, sameness_group and nodes, intentions, config-entries blocks", () => {
  let dir = "";
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), "cts-hcl-mesh-"));
  });
  after(() => rm(dir, { recursive: true, force: true }));
  const load = async (body: string) => {
    await writeFile(join(dir, "c.hcl"), body);
    return (await readCtsConfig([join(dir, "c.hcl")], dir)).config.tasks as ModuleTask[];
  };

  it("reads peer, partition and sameness_group of a services condition, and nodes, intentions and config-entries blocks", async () => {
    const [a, b] = await load(`
task {
  name = "a"
  module = "./m"
  condition "services" {
    names = ["web"]
    peer = "east"
    partition = "finance"
  }
  module_input "intentions" { destination = "web" }
}
task {
  name = "b"
  module = "./m"
  condition "nodes" {
    datacenter = "dc2"
    filter = "Meta.role == \\"edge\\""
    node_meta = { zone = "a" }
  }
  module_input "config-entries" {
    kind = "service-defaults"
    name = "web"
  }
}
`);
    assert.deepEqual(a!.condition, { kind: "services", query: { passingOnly: true, names: ["web"], peer: "east", partition: "finance" } });
    assert.deepEqual(a!.inputs, { intentions: { kind: "intentions", query: { destination: "web" } } });
    assert.deepEqual(b!.condition, { kind: "nodes", query: { datacenter: "dc2", filter: 'Meta.role == "edge"', nodeMeta: { zone: "a" } } });
    assert.deepEqual(b!.inputs, { configEntries: { kind: "config-entries", query: { kind: "service-defaults", name: "web" } } });
  });

  it("refuses a key a block does not take, naming the file, line and the keys it takes", async () => {
    await assert.rejects(
      load(`task {
  name = "a"
  module = "./m"
  condition "nodes" {
    names = ["web"]
  }
}
`),
      (e: Error) => /c\.hcl:5: 'names' is not a valid key in condition "nodes"\. Valid keys: datacenter, partition, filter, node_meta/.test(e.message),
    );
    await assert.rejects(
      load(`task {
  name = "a"
  module = "./m"
  condition "services" {
    regexp = "^web"
    sameness_group = "prod"
  }
}
`),
      /samenessGroup needs names/,
    );
  });
});

describe("the task API: cts's own condition and module_input blocks", () => {
  it("creates tasks with peer, nodes, intentions and config_entries blocks, as the CTS HCL blocks map", () => {
    const a = parseTask({
      name: "a",
      module: "./m",
      condition: { services: { names: ["web"], peer: "east", sameness_group: "" } },
      module_input: { intentions: { destination: "web" }, config_entries: { kind: "service-defaults", name: "web" } },
    });
    assert.deepEqual(a.condition, { kind: "services", query: { passingOnly: true, names: ["web"], peer: "east" } });
    assert.deepEqual(a.inputs, {
      intentions: { kind: "intentions", query: { destination: "web" } },
      configEntries: { kind: "config-entries", query: { kind: "service-defaults", name: "web" } },
    });
    const b = parseTask({ name: "b", module: "./m", condition: { nodes: { filter: "Meta.role == edge", node_meta: { zone: "a" } } } });
    assert.deepEqual(b.condition, { kind: "nodes", query: { filter: "Meta.role == edge", nodeMeta: { zone: "a" } } });
  });

  it("takes the same blocks from a task file (cts task create -task-file)", async () => {
    const json = await taskFromHcl(
      `task {
  name = "fw"
  module = "./m"
  condition "intentions" { destination = "db" }
  module_input "config-entries" { kind = "service-defaults" }
  module_input "nodes" { node_meta = { role = "edge" } }
}
`,
      "fw.hcl",
    );
    const spec = parseTask(json);
    assert.deepEqual(spec.condition, { kind: "intentions", query: { destination: "db" } });
    assert.deepEqual(Object.keys(spec.inputs ?? {}).sort(), ["configEntries", "nodes"]);
  });

  it("answers 400 for a config_entries block without a kind, a regexp with a peer, and a variable named like the data cts passes", () => {
    assert.throws(() => parseTask({ name: "c", module: "./m", condition: { config_entries: { name: "web" } } }), (e: Error & { status?: number }) => e.status === 400 && /kind/.test(e.message));
    assert.throws(() => parseTask({ name: "c", module: "./m", condition: { services: { regexp: "^web", peer: "east" } } }), (e: Error & { status?: number }) => e.status === 400 && /needs names/.test(e.message));
    assert.throws(() => parseTask({ name: "c", module: "./m", condition: { intentions: {} }, variables: { intentions: [] } }), (e: Error & { status?: number }) => e.status === 400 && /reserved/.test(e.message));
  });
});
