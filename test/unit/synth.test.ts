import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { file, provider } from "@cdktf/provider-local";
import { ModuleTask, Task, Testing, services, catalogServices, consulKv, schedule, type TaskScope } from "../../src/index.ts";
import { MemberList, MetaFiles, KvWithServices } from "../fixtures/tasks.ts";

const web = (id: string, extra: Record<string, unknown> = {}) => ({ name: "web", id, node: "n1", address: `10.0.0.${id.length}`, port: 80, ...extra });

describe("synthesis", () => {
  it("gives byte-identical JSON for the same input, whatever the instance order", () => {
    const task = new MemberList("members", "/tmp/members.txt");
    const a = Testing.synthTaskResult(task, { services: [web("a"), web("b")] });
    const b = Testing.synthTaskResult(task, { services: [web("b"), web("a")] });
    assert.equal(a.json, b.json);
    assert.equal(a.hash, b.hash);
    const c = Testing.synthTaskResult(task, { services: [web("a")] });
    assert.notEqual(a.hash, c.hash);
  });

  it("always writes the backend: CTS's Consul path with gzip, and no token", () => {
    const out = Testing.synthTask(new MemberList("members", "/tmp/m.txt"), { services: [] });
    assert.deepEqual(out.terraform.backend, { consul: { path: "consul-terraform-sync/terraform", gzip: true } });
    const custom = Testing.synthTask(new MemberList("m", "/tmp/m.txt"), {}, { backend: { consul: { path: "x", access_token: "secret-token" } } });
    assert.deepEqual(custom.terraform.backend, { consul: { path: "x" } });
    assert.doesNotMatch(JSON.stringify(custom), /secret-token/);
  });

  it("loosens the cdktf bindings' exact provider pins to the compatible range", () => {
    const out = Testing.synthTask(new MemberList("members", "/tmp/m.txt"), { services: [] });
    assert.equal(out.terraform.required_providers.local.version, "~> 2.6");
  });

  it("keeps ${…}, %{…} and cdktf token look-alikes from Consul literal", () => {
    const meta = '${file("/etc/hostname")} %{ if true }x%{ endif } ${TfToken[TOKEN.1]}';
    const out = Testing.synthTask(new MetaFiles("meta", "/tmp/x"), { services: [web("a", { meta: { v: meta } })] });
    const content = Object.values<any>(out.resource.local_file)[0].content;
    assert.equal(content, '$${file("/etc/hostname")} %%{ if true }x%%{ endif } $${TfToken[TOKEN.1]}');
  });

  it("refuses two constructs that would share one Terraform address", () => {
    class Clash extends Task {
      constructor() {
        super({ name: "clash", condition: services({ names: ["web"] }) });
      }
      synthesize(scope: TaskScope): void {
        new provider.LocalProvider(scope, "local");
        new file.File(scope, "a.b", { filename: "/tmp/1", content: "" });
        new file.File(scope, "ab", { filename: "/tmp/2", content: "" });
      }
    }
    assert.throws(() => Testing.synthTask(new Clash()), (e: any) => e.code === "TASK_ID_COLLISION" && /clash\/a\.b/.test(e.message) && /Task 'clash'/.test(e.message));
  });

  it("names the task when its synthesize() throws", () => {
    class Broken extends Task {
      constructor() {
        super({ name: "broken", condition: catalogServices() });
      }
      synthesize(): void {
        throw new Error("boom");
      }
    }
    assert.throws(() => Testing.synthTask(new Broken()), (e: any) => e.code === "TASK_SYNTH_FAILED" && /Task 'broken'.*boom/.test(e.message));
  });

  it("passes a KV-triggered task both its KV pairs and its services input", () => {
    const out = Testing.synthTask(new KvWithServices(), { kv: { "cfg/a": "1" }, services: [{ name: "api", id: "api-1" }] });
    assert.equal(out.resource.local_file.out.content, JSON.stringify({ kv: { "cfg/a": "1" }, n: 1 }));
  });
});

describe("ModuleTask", () => {
  it("calls the module as module.<task> with CTS's services map", () => {
    const task = new ModuleTask({ name: "fw", condition: services({ names: ["web"] }), module: "./modules/x", variables: { extra: 1 } });
    const out = Testing.synthTask(task, { services: [web("w1", { nodeDatacenter: "dc1", tags: ["b", "a"] })] }, { configDir: "/cfg", taskDir: "/cfg/sync-tasks/fw" });
    const mod = out.module.fw;
    assert.equal(mod.source, "../../modules/x");
    assert.equal(mod.extra, 1);
    assert.deepEqual(Object.keys(mod.services), ["w1.n1.dc1"]);
    const s = mod.services["w1.n1.dc1"];
    assert.deepEqual(Object.keys(s).sort(), [
      "address", "cts_user_defined_meta", "id", "kind", "meta", "name", "namespace", "node", "node_address", "node_datacenter", "node_id", "node_meta", "node_tagged_addresses", "port", "status", "tags",
    ]);
    assert.deepEqual(s.tags, ["a", "b"]);
  });

  it("passes catalog_services for a catalog-services condition, and a registry source as is", () => {
    const task = new ModuleTask({ name: "cat", condition: catalogServices({ regexp: "^web" }), module: "org/mod/aws", version: "1.2.0" });
    const out = Testing.synthTask(task, { catalogServices: { web: ["a"] } });
    assert.equal(out.module.cat.source, "org/mod/aws");
    assert.equal(out.module.cat.version, "1.2.0");
    assert.deepEqual(out.module.cat.catalog_services, { web: ["a"] });
    assert.deepEqual(out.module.cat.services, {}, "CTS always passes services (an empty map when no services are watched)");
  });

  it("passes services = {} and consul_kv under a schedule with a KV input, as CTS's root module does", () => {
    const task = new ModuleTask({ name: "s", condition: schedule({ cron: "* * * * *" }), inputs: { kv: consulKv({ path: "a" }) }, module: "org/m/x" });
    const out = Testing.synthTask(task, { kv: { a: "1" } });
    assert.deepEqual(out.module.s.services, {});
    assert.deepEqual(out.module.s.consul_kv, { a: "1" });
    assert.equal(out.module.s.catalog_services, undefined);
  });

  it("leaves the condition's data out with useAsModuleInput: false", () => {
    const task = new ModuleTask({ name: "k", condition: consulKv({ path: "a" }), useAsModuleInput: false, module: "org/m/x" });
    const out = Testing.synthTask(task, { kv: { a: "1" } });
    assert.deepEqual(out.module.k.services, {});
    assert.equal(out.module.k.consul_kv, undefined);
  });

  it("writes provider blocks fed from a sensitive variable and keeps provider values and task_env out of the JSON", () => {
    const task = new ModuleTask({
      name: "p",
      condition: services({ names: ["web"] }),
      module: "org/m/x",
      providers: [{ name: "aws", source: "hashicorp/aws", version: "~> 5.0", config: { region: "eu-west-1", assume_role: { role_arn: "arn:x" } }, taskEnv: { AWS_SECRET_ACCESS_KEY: "s3cr3t-value" } }],
    });
    const result = Testing.synthTaskResult(task, { services: [] });
    const out = JSON.parse(result.json);
    assert.deepEqual(out.provider.aws, [{ region: "${var.aws.region}", assume_role: { role_arn: "${var.aws.assume_role.role_arn}" } }]);
    assert.equal(out.variable.aws.sensitive, true);
    assert.equal(out.variable.aws.type, "object({region = string, assume_role = object({role_arn = string})})");
    assert.deepEqual(out.terraform.required_providers.aws, { source: "hashicorp/aws", version: "~> 5.0" });
    assert.doesNotMatch(result.json, /eu-west-1|s3cr3t-value/);
    assert.deepEqual(task.environment(), { TF_VAR_aws: '{"region" = "eu-west-1", "assume_role" = {"role_arn" = "arn:x"}}', AWS_SECRET_ACCESS_KEY: "s3cr3t-value" });
  });

  it("passes provider values as HCL Terraform can parse: no \\b or \\f escapes, no lone surrogates, ${ kept as text", () => {
    const task = new ModuleTask({ name: "p", condition: services({ names: ["web"] }), module: "org/m/x", providers: [{ name: "x", config: { key: 'a\b\f\\b"${x}%{y}\ud800🚀' } }] });
    assert.equal(task.environment().TF_VAR_x, '{"key" = "a\\u0008\\u000c\\\\b\\"$${x}%%{y}\ufffd🚀"}');
  });

  it("writes variables as data: a ${ in a value stays text", () => {
    const task = new ModuleTask({ name: "v", condition: services({ names: ["web"] }), module: "org/m/x", variables: { tpl: "a${b}" } });
    assert.equal(Testing.synthTask(task, { services: [] }).module.v.tpl, "a$${b}");
  });
});
