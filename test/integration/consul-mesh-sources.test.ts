import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { startConsul, type ConsulAgent } from "../support/consul.ts";
import { PUBLIC_API, startRuntime, tempDir, waitFor, type TestRuntime } from "../support/cts.ts";
import { tools } from "../support/tools.ts";

const MESH_TASKS = fileURLToPath(new URL("../fixtures/mesh-tasks.ts", import.meta.url));
const FIREWALL_MODULE = fileURLToPath(new URL("../fixtures/cts-modules/firewall", import.meta.url));
const read = (p: string) => readFile(p, "utf8").catch(() => undefined);

describe("intentions, config entries and nodes as task input (real Consul, real OpenTofu)", () => {
  let consul: ConsulAgent;
  let tmp: { dir: string; cleanup(): Promise<void> };
  let rt: TestRuntime;
  let rules: string;
  let edges: string;
  let moduleOut: string;
  let entry: string;
  let strictRules: string;
  const moduleData = async () => JSON.parse((await read(moduleOut)) ?? "null") as { rules: string[]; defaults: Record<string, string>; nodes: string[] } | null;

  before(async () => {
    consul = await startConsul();
    tmp = await tempDir();
    rules = join(tmp.dir, "rules.txt");
    edges = join(tmp.dir, "edges.txt");
    moduleOut = join(tmp.dir, "module.json");
    entry = join(tmp.dir, "entry.txt");
    strictRules = join(tmp.dir, "strict-rules.txt");
    const t = tools();
    const file = join(tmp.dir, "cts.config.ts");
    await writeFile(
      file,
      `import { defineConfig, ModuleTask, intentions, configEntries, nodes } from ${JSON.stringify(PUBLIC_API)};
import { EntryProtocol, FirewallRules, NodeList } from ${JSON.stringify(MESH_TASKS)};
export default defineConfig({
  consul: { address: ${JSON.stringify(consul.address)} },
  driver: { terraform: { binary: ${JSON.stringify(t.tofu)}, cliConfigFile: ${JSON.stringify(t.cliConfig)}, workingDir: ${JSON.stringify(join(tmp.dir, "sync-tasks"))}, log: true } },
  api: { port: 0 },
  tasks: [
    new FirewallRules("firewall", ${JSON.stringify(rules)}, "db"),
    new FirewallRules("firewall-strict", ${JSON.stringify(strictRules)}, "db", false),
    new NodeList("edges", ${JSON.stringify(edges)}, 'Meta.role == "edge"'),
    new EntryProtocol("api-protocol", ${JSON.stringify(entry)}, "service-defaults", "api"),
    new ModuleTask({
      name: "fw-module",
      module: ${JSON.stringify(FIREWALL_MODULE)},
      condition: intentions(),
      inputs: { configEntries: configEntries({ kind: "service-defaults" }), nodes: nodes({ nodeMeta: { role: "edge" } }) },
      variables: { out: ${JSON.stringify(moduleOut)} },
      bufferPeriod: false,
    }),
  ],
});
`,
    );
    rt = await startRuntime(file);
    await waitFor(async () => (await read(rules)) === "" && (await read(edges)) === "" && (await read(entry)) === "" && (await moduleData()) !== null, 60_000, "the first applies");
  });
  after(async () => {
    await rt?.close();
    await consul?.stop();
    await tmp?.cleanup();
  });

  it("opens what intentions allow into a destination: created, changed and deleted intentions each reach the task, in Consul's order", async () => {
    await consul.api("PUT", "/v1/connect/intentions/exact?source=web&destination=db", { Action: "allow" });
    await waitFor(async () => (await read(rules)) === "local/web allow\n", 30_000, "web allowed into db");
    await consul.api("PUT", "/v1/connect/intentions/exact?source=*&destination=db", { Action: "deny" });
    // The exact source is evaluated before the wildcard (Consul's precedence 9 over 8).
    await waitFor(async () => (await read(rules)) === "local/web allow\nlocal/* deny\n", 30_000, "the wildcard deny after web's allow");
    await consul.api("PUT", "/v1/connect/intentions/exact?source=web&destination=db", { Action: "deny" });
    await waitFor(async () => (await read(rules)) === "local/web deny\nlocal/* deny\n", 30_000, "web's intention changed to deny");
    await consul.api("DELETE", "/v1/connect/intentions/exact?source=web&destination=db");
    await waitFor(async () => (await read(rules)) === "local/* deny\n", 30_000, "web's intention deleted");
    // Another destination's intention is not this task's data: no run.
    await rt.controller.whenIdle();
    const runs = rt.controller.runCount("firewall");
    await consul.api("PUT", "/v1/connect/intentions/exact?source=web&destination=cache", { Action: "allow" });
    await waitFor(async () => ((await moduleData())?.rules ?? []).includes("web->cache allow 0"), 30_000, "the module task seeing every intention");
    await rt.controller.whenIdle();
    assert.equal(rt.controller.runCount("firewall"), runs, "the db firewall did not run for an intention into cache");
  });

  it("passes a module every intention (L7 permissions as JSON text) and, read at each run, the config entries of a kind", async () => {
    // An input does not start a run: the service-defaults entry is read by the run the intention starts.
    await consul.api("PUT", "/v1/config", { Kind: "service-defaults", Name: "db", Protocol: "http" });
    // A service-intentions entry replaces db's sources: one L7 intention with a permission.
    await consul.api("PUT", "/v1/config", { Kind: "service-intentions", Name: "db", Sources: [{ Name: "api", Permissions: [{ Action: "allow", HTTP: { PathPrefix: "/v1" } }] }] });
    await waitFor(async () => {
      const d = await moduleData();
      return d?.defaults.db === "http" && d.rules.includes("api->db  1") && !d.rules.some((x) => x.startsWith("*->db"));
    }, 30_000, "the L7 intention and the service-defaults entry in the module's input");
    await waitFor(async () => (await read(rules)) === "local/api allow\n", 30_000, "the class task opening for the L7 intention");
    await consul.api("PUT", "/v1/config", { Kind: "service-defaults", Name: "web", Protocol: "tcp" });
    await consul.api("DELETE", "/v1/config/service-intentions/db");
    await waitFor(async () => {
      const d = await moduleData();
      return d?.defaults.web === "tcp" && !d.rules.some((x) => x.endsWith("->db  1"));
    }, 30_000, "a second entry and the deleted intentions");
    await waitFor(async () => (await read(rules)) === "", 30_000, "the firewall closed when db's intentions were deleted");
    // With allowEmpty: false, a drop to no intentions is refused and the rules stay.
    await waitFor(() => rt.controller.events.list("firewall-strict").some((e) => !e.success && /dropped from 1 intentions to none/.test(e.error?.message ?? "")), 30_000, "the strict firewall refusing");
    assert.equal(await read(strictRules), "local/api allow\n");
  });

  it("runs a task whose condition is one config entry: created, changed and deleted", async () => {
    await consul.api("PUT", "/v1/config", { Kind: "service-defaults", Name: "api", Protocol: "http" });
    await waitFor(async () => (await read(entry)) === "service-defaults api http\n", 30_000, "the entry created");
    await consul.api("PUT", "/v1/config", { Kind: "service-defaults", Name: "api", Protocol: "grpc" });
    await waitFor(async () => (await read(entry)) === "service-defaults api grpc\n", 30_000, "the entry changed");
    await consul.api("DELETE", "/v1/config/service-defaults/api");
    await waitFor(async () => (await read(entry)) === "", 30_000, "the entry deleted");
  });

  it("watches the catalog's nodes through a filter: a node registered, changed and deregistered", async () => {
    await consul.api("PUT", "/v1/catalog/register", { Node: "edge-1", Address: "10.9.0.1", NodeMeta: { role: "edge" } });
    await consul.api("PUT", "/v1/catalog/register", { Node: "core-1", Address: "10.9.0.2", NodeMeta: { role: "core" } });
    await waitFor(async () => (await read(edges)) === "edge-1 10.9.0.1 edge\n", 30_000, "the edge node listed, not the core one");
    // The module task reads its nodes input at its next run (an intention starts one).
    await consul.api("PUT", "/v1/connect/intentions/exact?source=edge&destination=cache", { Action: "allow" });
    await waitFor(async () => JSON.stringify((await moduleData())?.nodes) === '["edge-1"]', 30_000, "the module's nodes input (node meta)");
    await consul.api("PUT", "/v1/catalog/register", { Node: "edge-1", Address: "10.9.0.7", NodeMeta: { role: "edge" } });
    await waitFor(async () => (await read(edges)) === "edge-1 10.9.0.7 edge\n", 30_000, "the node's new address");
    await consul.api("PUT", "/v1/catalog/deregister", { Node: "edge-1" });
    await waitFor(async () => (await read(edges)) === "", 30_000, "the node deregistered");
  });
});
