import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { PassThrough } from "node:stream";
import { parseHcl } from "../../src/config/hcl.ts";
import { taskFromHcl } from "../../src/cli/task-file.ts";
import { confirm } from "../../src/cli/confirm.ts";
import { resolveHttpAddr, DEFAULT_HTTP_ADDR } from "../../src/cli/api-client.ts";
import { parseTask } from "../../src/api/task-request.ts";
import { selfServiceDefinition } from "../../src/daemon/registration.ts";
import { CtsError } from "../../src/errors/cts-error.ts";

const isUsage = (message: RegExp) => (err: unknown) => err instanceof CtsError && err.category === "usage" && message.test(err.message);
const usage = (fn: () => unknown, message: RegExp) => assert.throws(fn, isUsage(message));
const rejectsUsage = (fn: () => Promise<unknown>, message: RegExp) => assert.rejects(fn, isUsage(message));

describe("the task file parser (CTS HCL subset)", () => {
  it("converts a CTS task block with every supported block into the API's JSON", async () => {
    const task = await taskFromHcl(
      `
      /* a task as CTS users write it */
      task "web-lb" {
        description = "lb for \\"web\\""
        module      = "org/lb/aws"   # registry module
        version     = "1.2.0"
        enabled     = false
        providers   = []
        variables   = { port = 8080, "zone-id" = "Z1", tags = ["a", "b"], literal = "$\${not_a_template}" }
        condition "services" {
          names                 = ["web", "api"]
          datacenter            = "dc1"
          cts_user_defined_meta = { team = "net" }
          use_as_module_input   = true
        }
        module_input "consul-kv" {
          path    = "cfg/"
          recurse = true
        }
        buffer_period {
          enabled = true
          min     = "2s"
          max     = "8s"
        }
      }`,
      "t.hcl",
    );
    assert.deepEqual(task, {
      name: "web-lb",
      description: 'lb for "web"',
      module: "org/lb/aws",
      version: "1.2.0",
      enabled: false,
      providers: [],
      variables: { port: 8080, "zone-id": "Z1", tags: ["a", "b"], literal: "${not_a_template}" },
      condition: { services: { names: ["web", "api"], datacenter: "dc1", cts_user_defined_meta: { team: "net" }, use_as_module_input: true } },
      module_input: { consul_kv: { path: "cfg/", recurse: true } },
      buffer_period: { enabled: true, min: "2s", max: "8s" },
    });
    assert.equal(parseTask(task).condition.kind, "services", "the API accepts what the file gives");
  });

  it("passes a task's terraform_cloud_workspace block and terraform_version on in CTS's API shape", async () => {
    const task = await taskFromHcl(
      `task "web" {
  module = "m"
  terraform_version = "1.5.7"
  condition "schedule" {
    cron = "* * * * *"
  }
  terraform_cloud_workspace {
    execution_mode = "agent"
    agent_pool_name = "pool"
  }
}`,
      "t.hcl",
    );
    assert.deepEqual([task.terraform_version, task.terraform_cloud_workspace], ["1.5.7", { execution_mode: "agent", agent_pool_name: "pool" }]);
    await rejectsUsage(() => taskFromHcl(`task "t" {
  module = "m"
  terraform_cloud_workspace "x" {}
}`, "t.hcl"), /^t\.hcl:3: terraform_cloud_workspace takes no label\./);
  });

  it("passes cts's own guards block and cts_allow_empty on as the API takes them", async () => {
    const task = await taskFromHcl(
      `task "web" {
  module = "m"
  cts_allow_empty = false
  condition "services" {
    names = ["web"]
  }
  guards {
    max_destroy = 1
    never_empty = ["local_file"]
    approval = "always"
  }
}`,
      "t.hcl",
    );
    assert.deepEqual([task.guards, task.cts_allow_empty], [{ max_destroy: 1, never_empty: ["local_file"], approval: "always" }, false]);
    const spec = parseTask(task);
    assert.deepEqual([spec.guards, spec.approval, spec.allowEmpty], [{ maxDestroy: 1, neverEmpty: ["local_file"] }, "always", false]);
    await rejectsUsage(() => taskFromHcl(`task "t" {\n  module = "m"\n  guards "x" {}\n}`, "t.hcl"), /^t\.hcl:3: guards takes no label\./);
  });

  it("reads CTS's unlabelled `task { name = ... }` form and the other condition types", async () => {
    const cond = async (block: string) => (await taskFromHcl(`task {\n name = "t"\n module = "m"\n ${block}\n}`, "t.hcl")).condition;
    assert.deepEqual(await cond(`condition "catalog-services" {\n regexp = "^web"\n node_meta = { rack = "r1" }\n}`), { catalog_services: { regexp: "^web", node_meta: { rack: "r1" } } });
    assert.deepEqual(await cond(`condition "consul-kv" { path = "k" }`), { consul_kv: { path: "k" } });
    assert.deepEqual(await cond(`condition "schedule" { cron = "0 * * * *" }`), { schedule: { cron: "0 * * * *" } });
  });

  it("refuses what it does not support, naming the file, line and fix", async () => {
    await rejectsUsage(() => taskFromHcl(`task "t" {\n  variable_files = ["no-such.tfvars"]\n}`, "t.hcl"), /^t\.hcl:2: cannot read variable file 'no-such\.tfvars'.*relative to the current directory, as in CTS/);
    await rejectsUsage(() => taskFromHcl(`task "t" {\n  variable_files = "a.tfvars"\n}`, "t.hcl"), /variable_files must be a list of file names/);
    await rejectsUsage(() => taskFromHcl(`task "t" {\n  module = "\${var.x}"\n}`, "t.hcl"), /^t\.hcl:2:\d+: '\$\{' starts a template/);
    await rejectsUsage(() => taskFromHcl(`task "a" {}\ntask "b" {}`, "t.hcl"), /exactly one task block \(found 2\)/);
    await rejectsUsage(() => taskFromHcl(`consul { address = "x" }\ntask "a" {}`, "t.hcl"), /'consul' is not allowed in a task file/);
    await rejectsUsage(() => taskFromHcl(`task "t" {\n  condition "colour" {}\n}`, "t.hcl"), /condition needs one label: "services", "catalog-services", "consul-kv", "nodes", "intentions", "config-entries", "schedule"/);
    await rejectsUsage(() => taskFromHcl(`task "t" {\n  module = foo\n}`, "t.hcl"), /'foo' is an expression; task files take literal values only/);
    await rejectsUsage(() => taskFromHcl(`task "t" {\n  module = "m"\n`, "t.hcl"), /a block is not closed/);
    await rejectsUsage(() => taskFromHcl(`task "t" {\n  name = "u"\n}`, "t.hcl"), /label \('t'\) and its name \('u'\) differ/);
  });

  it("reads heredocs (indented ones trimmed) and string escapes as literal strings", async () => {
    const body = await parseHcl(`a = <<EOT\nline 1\n  line 2\nEOT\nb = <<-EOT\n    x\n      y\n    EOT\nc = "tab\\there \\u00e9 \\"q\\" $\${x} %%{y}"\n`);
    assert.deepEqual(Object.fromEntries([...body.attributes].map(([k, v]) => [k, v.value])), { a: "line 1\n  line 2\n", b: "x\n  y\n", c: 'tab\there \u00e9 "q" \${x} %{y}' });
  });

  it("reports syntax errors and repeated attributes with file, line and column", async () => {
    await rejectsUsage(() => parseHcl(`task "t" {\n  module = \n}`, "t.hcl"), /^t\.hcl:\d+:\d+: /);
    await rejectsUsage(() => parseHcl(`a = 1\na = 2\n`, "t.hcl"), /^t\.hcl:2:1: 'a' is set twice/);
    await rejectsUsage(() => parseHcl(`a = [1, 2\n`, "t.hcl"), /^t\.hcl:\d+:\d+: /);
  });

  it("parses numbers, booleans, null, nested lists and objects, and all comment styles", async () => {
    const body = await parseHcl(`a = -1.5e2 // c1\nb = [true, false, null, [1, {x: "y"}],]\n# c2\nc = { "k" = { d = "e" } }`);
    assert.deepEqual(Object.fromEntries([...body.attributes].map(([k, v]) => [k, v.value])), { a: -150, b: [true, false, null, [1, { x: "y" }]], c: { k: { d: "e" } } });
  });
});

describe("asking before changing infrastructure", () => {
  it("refuses without a terminal unless --auto-approve", async () => {
    const input = Object.assign(new PassThrough(), { isTTY: false });
    await assert.rejects(confirm("Go?", "enable task 'x'", { io: { input, output: new PassThrough() } }), /Refusing to enable task 'x' without approval: stdin is not a terminal.*--auto-approve/);
    assert.equal(await confirm("Go?", "enable task 'x'", { autoApprove: true, io: { input, output: new PassThrough() } }), true);
  });

  it("accepts only 'yes' from a terminal", async () => {
    const ask = async (answer: string) => {
      const input = Object.assign(new PassThrough(), { isTTY: true });
      const output = new PassThrough();
      const pending = confirm("Apply?", "apply", { io: { input, output } });
      input.write(answer + "\n");
      return pending;
    };
    assert.equal(await ask("yes"), true);
    assert.equal(await ask("y"), false);
    assert.equal(await ask("no"), false);
  });
});

describe("the CLI's API address and the self-registration", () => {
  it("takes --http-addr, then CTS_ADDRESS, then http://127.0.0.1:8558, adding http:// to host:port", () => {
    assert.equal(resolveHttpAddr(undefined, {}), DEFAULT_HTTP_ADDR);
    assert.equal(resolveHttpAddr(undefined, { CTS_ADDRESS: "10.0.0.5:9000" }), "http://10.0.0.5:9000");
    assert.equal(resolveHttpAddr("https://cts.example:8558/", { CTS_ADDRESS: "x:1" }), "https://cts.example:8558");
    usage(() => resolveHttpAddr("ftp://x", {}), /--http-addr 'ftp:\/\/x' uses ftp:/);
  });

  it("registers as CTS does: service consul-terraform-sync, tag cts, HTTP check on /v1/health every 10 s", () => {
    const def = selfServiceDefinition({ id: "cts-host1", address: "127.0.0.1", port: 8558 });
    assert.equal(def.ID, "cts-host1");
    assert.equal(def.Name, "consul-terraform-sync");
    assert.deepEqual(def.Tags, ["cts"]);
    assert.equal(def.Address, "127.0.0.1");
    assert.equal(def.Port, 8558);
    assert.deepEqual(def.Check, {
      CheckID: "cts-host1-health",
      Name: "CTS Health Status",
      Notes: "Check created by Consul-Terraform-Sync",
      Status: "critical",
      HTTP: "http://127.0.0.1:8558/v1/health",
      TLSSkipVerify: true,
      Method: "GET",
      Interval: "10s",
      Timeout: "2s",
      DeregisterCriticalServiceAfter: "30m",
    });
    const wild = selfServiceDefinition({ id: "x", address: "0.0.0.0", port: 1 });
    assert.equal(wild.Address, undefined, "a wildcard listener advertises the node's address");
    assert.equal((wild.Check as { HTTP: string }).HTTP, "http://127.0.0.1:1/v1/health");
  });

  it("applies CTS's service_registration: name, address, namespace, check address (path + /v1/health) or no check", () => {
    const def = selfServiceDefinition({
      id: "i",
      address: "0.0.0.0",
      port: 8558,
      registration: { serviceName: "cts-east", address: "10.0.0.9", namespace: "team", defaultCheck: { address: "https://cts.example:9443/prefix/" } },
    });
    assert.deepEqual([def.Name, def.Address, def.Namespace, (def.Check as { HTTP: string }).HTTP], ["cts-east", "10.0.0.9", "team", "https://cts.example:9443/prefix/v1/health"]);
    assert.equal(selfServiceDefinition({ id: "i", address: "127.0.0.1", port: 1, registration: { defaultCheck: false } }).Check, undefined);
    assert.equal(selfServiceDefinition({ id: "i", address: "127.0.0.1", port: 1, https: true }).Check && (selfServiceDefinition({ id: "i", address: "127.0.0.1", port: 1, https: true }).Check as { HTTP: string }).HTTP, "https://127.0.0.1:1/v1/health");
  });
});
