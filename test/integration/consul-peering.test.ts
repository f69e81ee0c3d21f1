import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { startConsul, type ConsulAgent } from "../support/consul.ts";
import { PUBLIC_API, startRuntime, tempDir, waitFor, type TestRuntime } from "../support/cts.ts";
import { tools } from "../support/tools.ts";

const MESH_TASKS = fileURLToPath(new URL("../fixtures/mesh-tasks.ts", import.meta.url));
const read = (p: string) => readFile(p, "utf8").catch(() => undefined);

/**
 * Cluster peering (Consul 1.14+, every edition): two dev agents on 127.0.0.1, each its own cluster,
 * peered through their gRPC TLS ports. "east" exports service web to "west"; cts watches west.
 */
describe("a services condition on a cluster peer (two real Consul clusters, real OpenTofu)", () => {
  let east: ConsulAgent;
  let west: ConsulAgent;
  let tmp: { dir: string; cleanup(): Promise<void> };
  let rt: TestRuntime;
  let members: string;
  let strict: string;

  before(async () => {
    [east, west] = await Promise.all([startConsul({ peering: true, datacenter: "east", node: "east-node" }), startConsul({ peering: true, datacenter: "west", node: "west-node" })]);
    // east accepts, west dials: west's peer is named "east".
    const { PeeringToken } = await east.api("POST", "/v1/peering/token", { PeerName: "west" });
    await west.api("POST", "/v1/peering/establish", { PeerName: "east", PeeringToken });
    await waitFor(async () => (await west.api("GET", "/v1/peering/east"))?.State === "ACTIVE", 30_000, "the peering to become active");
    await east.register({ Name: "web", ID: "web-1", Address: "10.1.0.1", Port: 80 });
    // A local web in west too: the peer's query must not see it.
    await west.register({ Name: "web", ID: "web-local", Address: "10.2.0.1", Port: 80 });
    await east.api("PUT", "/v1/config", { Kind: "exported-services", Name: "default", Services: [{ Name: "web", Consumers: [{ Peer: "west" }] }] });
    await waitFor(async () => ((await west.api("GET", "/v1/health/service/web?peer=east")) as unknown[]).length === 1, 30_000, "web imported into west");

    tmp = await tempDir();
    members = join(tmp.dir, "members.txt");
    strict = join(tmp.dir, "strict.txt");
    const t = tools();
    const file = join(tmp.dir, "cts.config.ts");
    await writeFile(
      file,
      `import { defineConfig } from ${JSON.stringify(PUBLIC_API)};
import { PeerMembers } from ${JSON.stringify(MESH_TASKS)};
export default defineConfig({
  consul: { address: ${JSON.stringify(west.address)} },
  driver: { terraform: { binary: ${JSON.stringify(t.tofu)}, cliConfigFile: ${JSON.stringify(t.cliConfig)}, workingDir: ${JSON.stringify(join(tmp.dir, "sync-tasks"))}, log: true } },
  api: { port: 0 },
  tasks: [new PeerMembers("peer-web", ${JSON.stringify(members)}, "web", "east"), new PeerMembers("peer-web-strict", ${JSON.stringify(strict)}, "web", "east", false)],
});
`,
    );
    rt = await startRuntime(file);
    await waitFor(async () => (await read(members)) === "east web-1 10.1.0.1:80\n", 60_000, "the first apply of the peer's instance");
  });
  after(async () => {
    await rt?.close();
    await Promise.all([east?.stop(), west?.stop()]);
    await tmp?.cleanup();
  });

  it("applies the peer's instances as they change, each marked with its peer, without the local cluster's", async () => {
    await east.register({ Name: "web", ID: "web-2", Address: "10.1.0.2", Port: 81 });
    await waitFor(async () => (await read(members)) === "east web-1 10.1.0.1:80\neast web-2 10.1.0.2:81\n", 30_000, "web-2 registered in the peer");
    await east.deregister("web-1");
    await waitFor(async () => (await read(members)) === "east web-2 10.1.0.2:81\n", 30_000, "web-1 deregistered in the peer");
    await waitFor(async () => (await read(strict)) === "east web-2 10.1.0.2:81\n", 30_000, "the allowEmpty: false task following too");
  });

  it("sees no instances once the peering is deleted: applied as empty by default, refused with allowEmpty: false", async () => {
    await west.api("DELETE", "/v1/peering/east");
    await waitFor(async () => (await read(members)) === "", 30_000, "the peer's instances gone from the default task");
    await waitFor(() => rt.controller.events.list("peer-web-strict").some((e) => !e.success && /allowEmpty: false/.test(e.error?.message ?? "")), 30_000, "the strict task refusing the empty data");
    assert.equal(await read(strict), "east web-2 10.1.0.2:81\n", "the strict task kept what it had applied");
  });
});
