import { describe, it } from "node:test";
import assert, { AssertionError } from "node:assert/strict";
import { file, provider } from "@cdktf/provider-local";
import { Task, Testing, services, catalogServices, consulKv, constructId, type TaskInput, type TaskScope, type ServicesCondition, type CatalogServicesCondition, type ServicesQuery } from "../../src/index.ts";
import { KvWithServices } from "../fixtures/tasks.ts";

/** One file per instance the task receives, named by its id; content is meta.v. */
class PerInstance extends Task<ServicesCondition> {
  constructor(query: ServicesQuery) {
    super({ name: "per-instance", condition: services(query) });
  }
  synthesize(scope: TaskScope, input: TaskInput<ServicesCondition>): void {
    new provider.LocalProvider(scope, "local", { alias: "files" });
    for (const s of input.services) new file.File(scope, constructId(s.id), { filename: `/tmp/${s.id}.txt`, content: s.meta.v ?? "" });
  }
}

/** One file listing the catalog's service names. */
class Names extends Task<CatalogServicesCondition> {
  constructor() {
    super({ name: "names", condition: catalogServices({ regexp: "^api" }) });
  }
  synthesize(scope: TaskScope, input: TaskInput<CatalogServicesCondition>): void {
    new provider.LocalProvider(scope, "local");
    new file.File(scope, "names", { filename: "/tmp/names.txt", content: Object.keys(input.catalogServices).join(",") });
  }
}

const web = (id: string, extra: Record<string, unknown> = {}) => ({ name: "web", id, node: "n1", address: "10.0.0.1", port: 80, ...extra });
const idsIn = (json: Record<string, any>) => Object.keys(json.resource?.local_file ?? {}).sort();

describe("Testing gives each instance the checks Consul would: its service's and its node's", () => {
  const statusOf = (given: { services: any[] }, id: string) => Testing.taskInput(new PerInstance({ names: ["web"], passingOnly: false }), given).services!.find((s) => s.id === id)!.status;
  const select = (filter: string, given: { services: any[] }, passingOnly = false) => idsIn(Testing.synthTask(new PerInstance({ names: ["web"], filter, passingOnly }), given));

  it("keeps a critical instance for Checks.Status == passing, since its node's serfHealth passes (issue #37)", () => {
    const given = { services: [web("ok"), web("down", { status: "critical" })] };
    assert.deepEqual(select('Checks.Status == "passing"', given), ["down", "ok"]);
    assert.deepEqual(select('Checks.Status == "passing" and Checks.Status != "critical"', given), ["down", "ok"]);
    assert.deepEqual(select('Checks.CheckID == "serfHealth"', given), ["down", "ok"]);
    assert.deepEqual(select('Checks.Name == "Serf Health Status"', given), ["down", "ok"]);
    // "no check is critical" is `not Checks.Status == critical`.
    assert.deepEqual(select('not Checks.Status == "critical"', given), ["ok"]);
  });

  it("gives every instance on a node the node's checks, stated once", () => {
    const given = { services: [web("a", { nodeStatus: "critical" }), web("b"), web("c", { node: "n2" })] };
    assert.equal(statusOf(given, "b"), "critical");
    assert.equal(statusOf(given, "c"), "passing");
    assert.deepEqual(idsIn(Testing.synthTask(new PerInstance({ names: ["web"] }), given)), ["c"]);
    assert.deepEqual(select('Checks.CheckID == "serfHealth" and Checks.Status == "critical"', given), ["a", "b"]);
    assert.throws(() => Testing.taskInput(new PerInstance({ names: ["web"] }), { services: [web("a", { nodeStatus: "critical" }), web("b", { nodeStatus: "passing" })] }), /node n1: instances a and b give it different checks/);
  });

  it("models several service checks and node checks; the status is the worst of them all", () => {
    const given = {
      services: [
        web("a", { checks: [{ status: "passing" }, { id: "http", name: "HTTP", status: "warning" }] }),
        web("b", { node: "n2", checks: [], nodeChecks: [{ id: "serfHealth", status: "passing" }, { id: "disk", status: "critical" }] }),
        web("c", { node: "n3", checks: [{ status: "passing" }, { status: "passing" }] }),
      ],
    };
    assert.deepEqual([statusOf(given, "a"), statusOf(given, "b"), statusOf(given, "c")], ["warning", "critical", "passing"]);
    assert.deepEqual(select('Checks.CheckID == "service:a:1"', given), ["a"]);
    assert.deepEqual(select('Checks.CheckID == "service:c:2" or Checks.Name == HTTP', given), ["a", "c"]);
    assert.deepEqual(select('Checks.ServiceID == "" and Checks.Status == critical', given), ["b"]);
    assert.deepEqual(idsIn(Testing.synthTask(new PerInstance({ names: ["web"] }), given)), ["c"]);
    assert.throws(() => Testing.taskInput(new PerInstance({ names: ["web"] }), { services: [web("a", { status: "passing", checks: [] })] }), /give status or checks, not both/);
    assert.throws(() => Testing.taskInput(new PerInstance({ names: ["web"] }), { services: [web("a", { checks: [{ status: "ok" }] })] }), /a check's status is "passing", "warning" or "critical" \(got "ok"\)/);
  });

  it("models service and node maintenance as Consul's critical maintenance checks", () => {
    const given = { services: [web("m", { maintenance: true }), web("legacy", { node: "n2", status: "maintenance" }), web("x", { node: "n3", nodeMaintenance: true }), web("y", { node: "n3" })] };
    assert.deepEqual(["m", "legacy", "x", "y"].map((id) => statusOf(given, id)), ["maintenance", "maintenance", "maintenance", "maintenance"]);
    assert.deepEqual(select('Checks.CheckID == "_service_maintenance:m"', given), ["m"]);
    assert.deepEqual(select('Checks.CheckID == "_node_maintenance"', given), ["x", "y"]);
    assert.deepEqual(select('Checks.Status == "critical"', given), ["legacy", "m", "x", "y"]);
    assert.deepEqual(idsIn(Testing.synthTask(new PerInstance({ names: ["web"] }), given)), []);
  });
});

describe("Testing.synthTask gives the task what Consul would give it", () => {
  it("leaves out instances the condition's Consul filter excludes", () => {
    const task = new PerInstance({ names: ["web"], filter: 'Service.Tags contains "prod"' });
    const json = Testing.synthTask(task, { services: [web("a", { tags: ["prod"] }), web("b", { tags: ["dev"] })] });
    assert.deepEqual(idsIn(json), ["a"]);
  });

  it("keeps passing instances only, unless the filter reads Checks.Status (as the daemon drops ?passing)", () => {
    const given = { services: [web("ok"), web("down", { status: "critical" })] };
    assert.deepEqual(idsIn(Testing.synthTask(new PerInstance({ names: ["web"] }), given)), ["ok"]);
    assert.deepEqual(idsIn(Testing.synthTask(new PerInstance({ names: ["web"], filter: 'Checks.Status == "critical"' }), given)), ["down"]);
    assert.deepEqual(idsIn(Testing.synthTask(new PerInstance({ names: ["web"], passingOnly: false }), given)), ["down", "ok"]);
  });

  it("selects services by name or regexp, datacenter and namespace", () => {
    const given = {
      services: [web("w1"), { name: "api", id: "a1" }, { name: "api-v2", id: "a2" }, web("w2", { nodeDatacenter: "dc2" }), web("w3", { namespace: "team-b" })],
    };
    assert.deepEqual(idsIn(Testing.synthTask(new PerInstance({ regexp: "^api" }), given)), ["a1", "a2"]);
    assert.deepEqual(idsIn(Testing.synthTask(new PerInstance({ names: ["web"], datacenter: "dc1" }), given)), ["w1", "w3"]);
    assert.deepEqual(idsIn(Testing.synthTask(new PerInstance({ names: ["web"], namespace: "team-a" }), given)), ["w1", "w2"]);
  });

  it("applies a task's inputs and KV path too", () => {
    const json = Testing.synthTask(new KvWithServices(), { kv: { "cfg/a": "1", "other/b": "2" }, services: [{ name: "api", id: "api-1" }, { name: "web", id: "w" }] });
    assert.deepEqual(JSON.parse(json.resource.local_file.out.content), { kv: { "cfg/a": "1" }, n: 1 });
  });

  it("filters catalog services by the condition's regexp", () => {
    const json = Testing.synthTask(new Names(), { catalogServices: { api: [], "api-v2": [], web: [] } });
    assert.equal(json.resource.local_file.names.content, "api,api-v2");
  });

  it("passes the data as given with asGiven", () => {
    const task = new PerInstance({ names: ["web"], filter: 'Service.Tags contains "prod"' });
    assert.deepEqual(idsIn(Testing.synthTask(task, { services: [web("a"), { name: "db", id: "d" }], asGiven: true })), ["a", "d"]);
    assert.deepEqual(Testing.taskInput(task, { services: [web("a", { tags: ["prod"] }), web("b")] }).services?.map((s) => s.id), ["a"]);
  });

  it("fails, naming the selector, on a filter it cannot evaluate", () => {
    const task = new PerInstance({ names: ["web"], filter: "Service.Weights.Passing == 1" });
    assert.throws(() => Testing.synthTask(task, { services: [web("a")] }), (e: any) => e.code === "FILTER_UNSUPPORTED" && /Service\.Weights\.Passing/.test(e.message));
  });
});

describe("Testing's assertions on synthesized JSON", () => {
  const json = Testing.synthTask(new PerInstance({ names: ["web"] }), { services: [web("a", { meta: { v: "one" } }), web("b", { meta: { v: "two" } }), web("c", { meta: { v: "${file(\"/etc/passwd\")}" } })] });

  it("finds a resource by type and a deep subset of its properties, also a RegExp", () => {
    const found = Testing.assertHasResource(json, "local_file", { filename: "/tmp/a.txt", content: "one" });
    assert.equal(found.address, "local_file.a");
    Testing.assertHasResource(JSON.stringify(json), "local_file", { content: /^tw/ });
  });

  it("fails with the nearest resources and what differs", () => {
    assert.throws(
      () => Testing.assertHasResource(json, "local_file", { filename: "/tmp/a.txt", content: "uno" }),
      (e: unknown) => {
        assert.ok(e instanceof AssertionError);
        assert.match(e.message, /Expected a resource of type local_file with \{"filename":"\/tmp\/a\.txt","content":"uno"\}; the nearest of 3:/);
        // The nearest first: a differs in content only; the others in filename and content.
        assert.match(e.message, /\n {2}local_file\.a:\n {4}content: expected "uno", got "one"\n {2}local_file\.b:/);
        return true;
      },
    );
    assert.throws(() => Testing.assertHasResource(json, "local_sensitive_file"), /there is none\. Resource types present: local_file \(3\)/);
  });

  it("counts resources, with or without properties", () => {
    assert.equal(Testing.assertResourceCount(json, "local_file", 3).length, 3);
    Testing.assertResourceCount(json, "local_file", 1, { content: "two" });
    assert.throws(() => Testing.assertResourceCount(json, "local_file", 2, { content: "two" }), /Expected 2 resource\(s\) of type local_file with \{"content":"two"\}, found 1: local_file\.b\.\nThe nearest others:/);
    Testing.assertNoResource(json, "local_file", { content: "three" });
    assert.throws(() => Testing.assertNoResource(json, "local_file", { content: "two" }), /found local_file\.b/);
  });

  it("checks a provider is configured, with its properties", () => {
    assert.deepEqual(Testing.assertProviderConfigured(json, "local", { alias: "files" }), { alias: "files" });
    assert.throws(() => Testing.assertProviderConfigured(json, "local", { alias: "other" }), /provider\.local:\n {4}alias: expected "other", got "files"/);
    assert.throws(() => Testing.assertProviderConfigured(json, "null"), /Expected provider "null" to be configured, but it is not\. Providers configured: local/);
  });

  it("sees that catalog text stays literal, and names a value Terraform would interpolate", () => {
    Testing.assertNoInterpolation(json);
    const raw = { resource: { local_file: { x: { content: "a ${var.secret} b", filename: "$${literal}" } } } };
    assert.throws(() => Testing.assertNoInterpolation(raw, "local_file"), /Terraform would evaluate .*:\n {2}local_file\.x\.content: "a \$\{var\.secret\} b" evaluates \$\{var\.secret\}$/);
    Testing.assertNoInterpolation({ resource: { local_file: { x: { content: "%%{ if } $${x} $$$${y}" } } } });
    // A literal `$${x}` is written `$$${x}` (Terraform reads the last pair as the escape).
    Testing.assertNoInterpolation({ resource: { local_file: { x: { content: "$$${x} %%%{y}" } } } });
  });
});
