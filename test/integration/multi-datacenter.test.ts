import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { startConsul, type ConsulAgent } from "../support/consul.ts";
import { startRuntime, tempDir, waitFor, writeConfig } from "../support/cts.ts";

const MODULE = fileURLToPath(new URL("../fixtures/cts-modules/record", import.meta.url));

describe("several datacenters, as Consul is meant to run", () => {
  it("a cts on dc1 follows services, catalog and KV changes made in dc2, with the datacenter in the services keys", async () => {
    const agents: ConsulAgent[] = [];
    const tmp = await tempDir();
    try {
      const dc1 = await startConsul({ datacenter: "dc1", node: "node-dc1" });
      agents.push(dc1);
      const dc2 = await startConsul({ datacenter: "dc2", node: "node-dc2", retryJoinWan: [`127.0.0.1:${dc1.serfWanPort}`] });
      agents.push(dc2);
      // The WAN join is done when dc1's servers know dc2 and can route a query there.
      await waitFor(async () => ((await dc1.api("GET", "/v1/catalog/datacenters")) as string[]).includes("dc2"), 60_000, "dc1 to see dc2 over the WAN");
      await waitFor(async () => "consul" in ((await dc1.api("GET", "/v1/catalog/services?dc=dc2")) as object), 60_000, "a query routed to dc2");

      await dc2.register({ Name: "api", ID: "api-1", Address: "10.2.0.1", Port: 9000 });
      await dc1.register({ Name: "api", ID: "api-dc1", Address: "10.1.0.1", Port: 9000 });
      await dc2.api("PUT", "/v1/kv/cfg/mode", "blue");
      const out = (t: string) => join(tmp.dir, `${t}.json`);
      const vars = (t: string) => JSON.stringify({ prefix: t, out: out(t) });
      const file = await writeConfig(tmp.dir, {
        consulAddress: dc1.address,
        extra: "bufferPeriod: false,",
        tasks: [
          `new ModuleTask({ name: "svc", condition: services({ names: ["api"], datacenter: "dc2" }), module: ${JSON.stringify(MODULE)}, variables: ${vars("svc")} })`,
          `new ModuleTask({ name: "cat", condition: catalogServices({ regexp: "^api", datacenter: "dc2" }), module: ${JSON.stringify(MODULE)}, variables: ${vars("cat")} })`,
          `new ModuleTask({ name: "kv", condition: consulKv({ path: "cfg/", recurse: true, datacenter: "dc2" }), module: ${JSON.stringify(MODULE)}, variables: ${vars("kv")} })`,
        ],
      });
      const got = async (t: string) => JSON.parse(await readFile(out(t), "utf8"));
      const rt = await startRuntime(file);
      try {
        await waitFor(async () => Object.keys((await got("svc")).services).length === 1, 120_000, "the first run of svc");
        assert.match(Object.keys((await got("svc")).services)[0]!, /^api-1\.node-dc2\.dc2$/, "CTS keys an instance id.node.datacenter, here dc2's");
        assert.equal(Object.values<any>((await got("svc")).services)[0].node_datacenter, "dc2");
        await waitFor(async () => JSON.stringify((await got("cat")).catalog_services) === JSON.stringify({ api: [] }), 120_000, "the first run of cat");
        await waitFor(async () => (await got("kv")).consul_kv["cfg/mode"] === "blue", 120_000, "the first run of kv");

        // Changes made in dc2 reach the tasks through dc1's agent.
        await dc2.register({ Name: "api", ID: "api-2", Address: "10.2.0.2", Port: 9000 });
        await dc2.register({ Name: "api-admin", ID: "admin-1", Port: 9100, Tags: ["ops"] });
        await dc2.api("PUT", "/v1/kv/cfg/mode", "green");
        await waitFor(async () => Object.keys((await got("svc")).services).sort().join() === "api-1.node-dc2.dc2,api-2.node-dc2.dc2", 120_000, "svc to see api-2 in dc2");
        await waitFor(async () => JSON.stringify((await got("cat")).catalog_services) === JSON.stringify({ api: [], "api-admin": ["ops"] }), 120_000, "cat to see api-admin in dc2");
        await waitFor(async () => (await got("kv")).consul_kv["cfg/mode"] === "green", 120_000, "kv to see the new value in dc2");
        assert.doesNotMatch(JSON.stringify((await got("svc")).services), /api-dc1/, "dc1's own instance is not in a dc2 task");
      } finally {
        await rt.close();
      }
    } finally {
      for (const a of agents.reverse()) await a.stop();
      await tmp.cleanup();
    }
  });
});
