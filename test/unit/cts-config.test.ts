import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { join } from "node:path";
import { writeFile } from "node:fs/promises";
import { readCtsConfig, fromCtsConfig } from "../../src/cts/config/load.ts";
import { loadConfig } from "../../src/config/load.ts";
import { Testing } from "../../src/testing.ts";
import { tempDir } from "../support/cts.ts";
import { backendSecretEnv } from "../../src/config/backend-secrets.ts";
import { backendBlock } from "../../src/synth/backend.ts";
import { commandEnv } from "../../src/terraform/env.ts";
import { redact } from "../../src/log/logger.ts";

const DIR = fileURLToPath(new URL("../fixtures/cts-configs/", import.meta.url));
const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const plain = (v: unknown) => JSON.parse(JSON.stringify(v));

describe("a CTS configuration file", () => {
  it("maps every block of CTS's reference example onto the runtime config", async () => {
    process.env.CTS_TEST_AWS_KEY = "AKIA-from-env";
    process.env.CTS_TEST_AWS_SECRET = "secret-from-env";
    const r = await readCtsConfig([join(DIR, "full.hcl")], ROOT);
    const { tasks, ...rest } = r.config;
    assert.equal(r.logLevel, "debug");
    assert.deepEqual(plain(rest), {
      id: "cts-01",
      api: { port: 8502, tls: { certFile: "/etc/cts/cert.pem", keyFile: "/etc/cts/key.pem", caFile: "/etc/cts/ca.pem", verifyIncoming: true } },
      highAvailability: { cluster: { name: "cts-cluster", storage: { parentPath: "cts-ha/", namespace: "ns1", sessionTtl: "30s" } }, instance: { address: "cts-01.example.com:8502" } },
      bufferPeriod: { min: "5s", max: "20s" },
      consul: {
        address: "consul.example.com:8501",
        token: "s3cr3t-acl-token",
        tls: { enabled: true, caFile: "/etc/consul/ca.pem", certFile: "/etc/consul/cert.pem", keyFile: "/etc/consul/key.pem", serverName: "consul.example.com" },
        transport: { keepAliveMsecs: 10_000, connectTimeoutMs: 10_000, keepAlive: true, freeSocketTimeoutMs: 60_000, maxFreeSockets: 100, tlsHandshakeTimeoutMs: 10_000 },
        serviceRegistration: { serviceName: "cts", defaultCheck: { address: "http://127.0.0.1:8502" } },
      },
      driver: { terraform: { workingDir: "sync-tasks", binary: "/usr/local/bin/terraform", backend: { consul: { path: "cts-prod/terraform", gzip: true } } } },
    });
    assert.deepEqual(
      tasks.map((t) => [t.name, t.enabled, t.condition.kind, Object.keys(t.inputs)]),
      [
        ["web-lb", true, "services", ["kv"]],
        ["catalog", false, "catalog-services", []],
        ["kv", true, "consul-kv", ["services"]],
        ["nightly", true, "schedule", ["services"]],
      ],
    );
    const [web, catalog, kv, nightly] = plain(tasks);
    assert.deepEqual(web.condition.query, { passingOnly: true, names: ["web", "api"], datacenter: "dc1", namespace: "default", filter: 'Service.Tags contains "lb"', userMeta: { team: "edge" } });
    assert.deepEqual(web.inputs.kv.query, { path: "lb/config/", recurse: true });
    assert.deepEqual(web.bufferPeriod, { min: "10s" });
    assert.deepEqual(web.variables, { pool_name: "web", ports: [80, 443], tags: { env: "prod" } }, "variable_files are read at load time");
    assert.deepEqual(web.providers, [{ name: "aws", config: { region: "us-west-2" }, taskEnv: {}, source: "hashicorp/aws", version: "~> 5.0" }], "aws.west is the aliased block");
    assert.equal(catalog.useAsModuleInput, false);
    assert.equal(catalog.module, "org/catalog/aws", "source is CTS's deprecated alias of module");
    assert.deepEqual(catalog.condition.query, { regexp: "^web", nodeMeta: { rack: "r1" } });
    assert.deepEqual(catalog.providers[0].config, { region: "us-east-1", access_key: "AKIA-from-env", assume_role: { role_arn: "arn:aws:iam::1:role/cts" } });
    assert.deepEqual(catalog.providers[0].taskEnv, { AWS_SECRET_ACCESS_KEY: "secret-from-env" });
    assert.deepEqual(kv.condition.query, { path: "app/config", recurse: false, datacenter: "dc2" });
    assert.deepEqual(kv.inputs.services.query, { passingOnly: true, regexp: "^api-" });
    assert.equal(nightly.condition.cron, "0 0 2 * * * *");
    assert.equal(nightly.bufferPeriod, undefined, "schedule tasks have no buffer period");
    assert.ok(r.warnings.some((w) => /full\.hcl:\d+: 'consul\.transport\.max_idle_conns' has no effect: Node's HTTP agent/.test(w)));
  });

  it("keeps provider values and task_env out of the synthesized JSON", async () => {
    process.env.CTS_TEST_AWS_KEY = "AKIA-from-env";
    process.env.CTS_TEST_AWS_SECRET = "secret-from-env";
    const r = await readCtsConfig([join(DIR, "full.hcl")], ROOT);
    const catalog = r.config.tasks[1]!;
    const out = Testing.synthTaskResult(catalog, { catalogServices: { web: [] } });
    assert.doesNotMatch(out.json, /AKIA-from-env|secret-from-env|us-east-1/);
    assert.match(out.json, /\$\{var\.aws\.access_key\}/);
  });

  it("merges a -config-dir in name order: later values win, tasks are appended, JSON and HCL alike", async () => {
    const r = await readCtsConfig([join(DIR, "split")], ROOT);
    assert.deepEqual(r.files.map((f) => f.slice(DIR.length)), ["split/10-global.hcl", "split/20-override.json"]);
    assert.deepEqual(plain(r.config.consul), { address: "127.0.0.1:8500", token: "t" });
    assert.equal(r.config.api?.port, 9100);
    assert.deepEqual(r.config.tasks.map((t) => t.name), ["first", "second"]);
    assert.deepEqual(plain(r.config.tasks[1]!.condition), { kind: "consul-kv", query: { path: "a/b", recurse: true } });
    assert.deepEqual(plain((r.config.tasks[1] as any).providers), [{ name: "local", config: {}, taskEnv: {} }], "a provider of an earlier file is found");
  });

  it("loads through loadConfig (as `cts watch --config x.hcl` does), from the working directory", async () => {
    const loaded = await loadConfig([join(DIR, "split/10-global.hcl"), join(DIR, "split/20-override.json")], ROOT);
    assert.equal(loaded.dir, ROOT);
    assert.equal(loaded.ctsFiles?.length, 2);
    assert.equal(loaded.logLevel, "info");
  });

  it("reads a TypeScript ModuleTask's variableFiles when the config loads (relative to the config), variables winning", async () => {
    const { dir, cleanup } = await tempDir("cts-vf-");
    try {
      await writeFile(join(dir, "a.tfvars"), 'x = "from-a"\ny = "from-a"\n');
      await writeFile(join(dir, "b.tfvars"), 'y = "from-b"\nz = "from-b"\n');
      const api = fileURLToPath(new URL("../../src/index.ts", import.meta.url));
      await writeFile(
        join(dir, "cts.config.ts"),
        `import { defineConfig, ModuleTask, schedule } from ${JSON.stringify(api)};
export default defineConfig({ tasks: [new ModuleTask({ name: "m", condition: schedule({ cron: "* * * * *" }), module: "org/m/x", variableFiles: ["a.tfvars", "b.tfvars"], variables: { z: "inline" } })] });
`,
      );
      const loaded = await loadConfig(join(dir, "cts.config.ts"));
      const out = Testing.synthTask(loaded.config.tasks[0]!, {});
      assert.deepEqual([out.module.m.x, out.module.m.y, out.module.m.z], ["from-a", "from-b", "inline"]);
    } finally {
      await cleanup();
    }
  });

  it("reads cts's own task key cts_allow_empty (allowEmpty); without it a task allows empty data, as CTS", async () => {
    const { dir, cleanup } = await tempDir("cts-allow-empty-");
    try {
      const task = (name: string, extra: string) => `task {\n  name = "${name}"\n  module = "./m"\n${extra}  condition "services" {\n    names = ["web"]\n  }\n}\n`;
      await writeFile(join(dir, "a.hcl"), task("strict", "  cts_allow_empty = false\n") + task("plain", ""));
      const r = await readCtsConfig([join(dir, "a.hcl")], dir);
      assert.deepEqual(r.config.tasks.map((t) => [t.name, t.allowEmpty]), [["strict", false], ["plain", true]]);
    } finally {
      await cleanup();
    }
  });

  it("takes the Consul token from a Vault secret (cts only, CTS #825) and refuses one from a Consul key, with its line", async () => {
    const { dir, cleanup } = await tempDir("cts-consul-token-template-");
    try {
      const task = `task {\n  name = "t"\n  module = "./m"\n  condition "services" {\n    names = ["web"]\n  }\n}\n`;
      await writeFile(join(dir, "vault.hcl"), `consul {\n  address = "127.0.0.1:8500"\n  token = "{{ with secret \\"secret/data/cts\\" }}{{ .Data.data.token }}{{ end }}"\n}\n${task}`);
      const r = await readCtsConfig([join(dir, "vault.hcl")], dir);
      assert.deepEqual(r.config.consul?.token, { ctsTemplate: [{ secret: "secret/data/cts", field: ["data", "token"] }] });
      await writeFile(join(dir, "plain.hcl"), `consul {\n  token = "4c1f-plain"\n}\n${task}`);
      assert.equal((await readCtsConfig([join(dir, "plain.hcl")], dir)).config.consul?.token, "4c1f-plain");
      await writeFile(join(dir, "key.hcl"), `consul {\n  address = "127.0.0.1:8500"\n  token = "{{ key \\"cts/token\\" }}"\n}\n${task}`);
      await assert.rejects(readCtsConfig([join(dir, "key.hcl")], dir), /key\.hcl:3: consul\.token cannot come from \{\{ key \}\}/);
    } finally {
      await cleanup();
    }
  });

  it("gives a TypeScript config CTS's tasks through fromCtsConfig", async () => {
    const tasks = await fromCtsConfig(join(DIR, "split/*.hcl"));
    assert.deepEqual(tasks.map((t) => t.name), ["first"]);
  });

  for (const [file, message] of [
    ["unknown-key.hcl", /unknown-key\.hcl:8: 'colour' is not a valid key in task/],
    ["tfc.hcl", /tfc\.hcl:8: task 't': 'terraform_cloud_workspace' is only valid with driver "terraform-cloud"/],
    ["driver-tfc.hcl", /driver-tfc\.hcl:1: driver "terraform-cloud" needs the organization: set organization = "<name>" or the TFC_ORGANIZATION/],
    ["license.hcl", /license\.hcl:1: 'license' is a CTS Enterprise feature/],
    ["two-consul.hcl", /two-consul\.hcl:5: only one 'consul' block can be configured/],
    ["template.hcl", /template\.hcl:3: 'module' uses template syntax/],
    ["provider-template.hcl", /provider-template\.hcl:3: terraform_provider "aws": '\{\{ \.Data\.secret_key \| toUpper \}\}' is not a template cts supports/],
    ["unknown-top.json", /unknown-top\.json:3: 'colour' is not a valid key/],
    ["bad-cron.hcl", /bad-cron\.hcl:9: task 'nightly': condition\.cron /],
    ["duplicate-task.hcl", /duplicate-task\.hcl:10: task 'same' is configured twice \(also at .*duplicate-task\.hcl:2\)/],
  ] as const) {
    it(`refuses ${file} with the file, the line and the key`, async () => {
      await assert.rejects(readCtsConfig([join(DIR, "bad", file)], ROOT), (e: any) => e.code === "CONFIG_INVALID" && message.test(e.message));
    });
  }

  it("maps driver \"terraform\" { log = true } to driver.terraform.log (Terraform's output at info)", async () => {
    const { dir, cleanup } = await tempDir("cts-hcl-");
    try {
      await writeFile(join(dir, "log.hcl"), 'driver "terraform" {\n  log = true\n}\n');
      const r = await readCtsConfig([join(dir, "log.hcl")], dir);
      assert.equal(r.config.driver?.terraform?.log, true);
      assert.ok(!r.warnings.some((w) => /'log'/.test(w)), r.warnings.join("\n"));
    } finally {
      await cleanup();
    }
  });

  it("loads backend credentials as CTS does, and keeps them out of main.tf.json and logs: they reach Terraform in its environment", async () => {
    const { dir, cleanup } = await tempDir("cts-hcl-");
    try {
      await writeFile(
        join(dir, "be.hcl"),
        'driver "terraform" {\n  backend "consul" {\n    address = "127.0.0.1:8500"\n    access_token = "be-token-123"\n    http_auth = "u:be-pass-456"\n  }\n}\n',
      );
      const r = await readCtsConfig([join(dir, "be.hcl")], dir);
      const backend = r.config.driver?.terraform?.backend;
      assert.deepEqual(backendBlock(backend), { consul: { path: "consul-terraform-sync/terraform", gzip: true, address: "127.0.0.1:8500" } });
      assert.deepEqual(backendSecretEnv(backend), { CONSUL_HTTP_TOKEN: "be-token-123", CONSUL_HTTP_AUTH: "u:be-pass-456" });
      assert.equal(redact("token be-token-123, auth u:be-pass-456"), "token [redacted], auth [redacted]");
      const env = commandEnv({ inherited: {}, base: { CONSUL_HTTP_TOKEN: "consul-token" }, task: { CONSUL_HTTP_TOKEN: "task-token" }, backend: backendSecretEnv(backend) });
      assert.equal(env.CONSUL_HTTP_TOKEN, "be-token-123", "the backend's own setting wins, as it does in CTS's main.tf");
    } finally {
      await cleanup();
    }
  });

  it("maps every backend's credential settings to the variable the backend reads them from", () => {
    const backend = { s3: { bucket: "b", access_key: "AKIA1", secret_key: "s3-secret", token: "sess" } };
    assert.deepEqual(backendBlock(backend), { s3: { bucket: "b" } });
    assert.deepEqual(backendSecretEnv(backend), { AWS_ACCESS_KEY_ID: "AKIA1", AWS_SECRET_ACCESS_KEY: "s3-secret", AWS_SESSION_TOKEN: "sess" });
    assert.deepEqual(backendSecretEnv({ pg: { conn_str: "postgres://u:p@h/db", schema_name: "x" } }), { PG_CONN_STR: "postgres://u:p@h/db" });
    assert.deepEqual(backendSecretEnv({ local: { path: "x" } }), {});
    assert.deepEqual(backendSecretEnv({ consul: { access_token: "" } }), {}, "an empty setting is unset");
  });

  it("reads cts's guards block: global guards for every task, a task's own guards and approval", async () => {
    const { dir, cleanup } = await tempDir("cts-hcl-");
    try {
      await writeFile(
        join(dir, "guards.hcl"),
        [
          "guards {",
          "  max_destroy = 5",
          "}",
          'task {',
          '  name   = "web"',
          '  module = "./m"',
          '  condition "services" {',
          '    names = ["web"]',
          "  }",
          "  guards {",
          "    max_destroy_percent = 20",
          '    never_empty         = ["consul_acl_policy", "module.web.local_file.pool"]',
          '    approval            = "always"',
          "  }",
          "}",
          'task {',
          '  name   = "api"',
          '  module = "./m"',
          '  condition "services" {',
          '    names = ["api"]',
          "  }",
          "}",
          "",
        ].join("\n"),
      );
      const r = await readCtsConfig([join(dir, "guards.hcl")], dir);
      assert.deepEqual(r.config.guards, { maxDestroy: 5 });
      const [web, api] = r.config.tasks;
      assert.deepEqual(plain(web!.guards), { maxDestroyPercent: 20, neverEmpty: ["consul_acl_policy", "module.web.local_file.pool"] });
      assert.equal(web!.approval, "always");
      assert.equal(api!.guards, undefined, "the global guards apply to it at run time");
    } finally {
      await cleanup();
    }
  });

  for (const [body, message] of [
    ["guards {\n  max_destroy = -1\n}\n", /guards\.hcl:2: guards\.max_destroy must be a whole number ≥ 0 \(got -1\)/],
    ['guards {\n  max_destroy = "3"\n}\n', /guards\.hcl:2: guards\.max_destroy must be a number \(got "3"\)/],
    ["guards {\n  max_destroy_percent = 150\n}\n", /guards\.hcl:2: guards\.max_destroy_percent must be a number from 0 to 100/],
    ['guards {\n  never_empty = "local_file"\n}\n', /guards\.hcl:2: guards\.never_empty must be a list/],
    ['guards {\n  approval = "always"\n}\n', /guards\.hcl:2: guards\.approval is set per task/],
    ["guards {\n  max_destory = 1\n}\n", /guards\.hcl:2: 'max_destory' is not a valid key in guards/],
    ['task {\n  name = "t"\n  module = "./m"\n  condition "services" {\n    names = ["w"]\n  }\n  guards {\n    approval = "sometimes"\n  }\n}\n', /guards\.hcl:8: guards\.approval must be "always"/],
  ] as const) {
    it(`refuses a bad guards block with its line: ${message.source.slice(0, 60)}`, async () => {
      const { dir, cleanup } = await tempDir("cts-hcl-");
      try {
        await writeFile(join(dir, "guards.hcl"), body);
        await assert.rejects(readCtsConfig([join(dir, "guards.hcl")], dir), (e: any) => e.code === "CONFIG_INVALID" && message.test(e.message) || assert.fail(e.message));
      } finally {
        await cleanup();
      }
    });
  }

  it("refuses an HCL syntax error with file:line:column", async () => {
    const { dir, cleanup } = await tempDir("cts-hcl-");
    try {
      await writeFile(join(dir, "broken.hcl"), 'consul {\n  address = "a"\n');
      await assert.rejects(readCtsConfig([join(dir, "broken.hcl")]), (e: any) => e.code === "CONFIG_INVALID" && /broken\.hcl:\d+:\d+: /.test(e.message));
    } finally {
      await cleanup();
    }
  });
});

describe("a CTS high_availability block", () => {
  /** The block as CTS 0.7's announcement prints it, with its storage label swapped for `label`. */
  const announced = (label: string) => `high_availability {
  cluster {
    name = "cts-cluster"
    storage "${label}" {
      parent_path = "cts"
      session_ttl = "30s"
    }
  }
  instance {
    address = "cts-01.example.com:8558"
  }
}
`;
  const load = async (label: string) => {
    const { dir, cleanup } = await tempDir("cts-ha-");
    try {
      await writeFile(join(dir, "ha.hcl"), announced(label));
      return await readCtsConfig([join(dir, "ha.hcl")]);
    } finally {
      await cleanup();
    }
  };

  it('loads storage "consul" (the 0.7 announcement\'s spelling) exactly as storage "default"', async () => {
    const consul = await load("consul");
    const byDefault = await load("default");
    assert.deepEqual(plain(consul.config.highAvailability), plain(byDefault.config.highAvailability));
    assert.deepEqual(plain(consul.config.highAvailability), {
      cluster: { name: "cts-cluster", storage: { parentPath: "cts", sessionTtl: "30s" } },
      instance: { address: "cts-01.example.com:8558" },
    });
  });

  it("refuses an unknown storage label at its file:line, naming the labels it accepts", async () => {
    await assert.rejects(
      load("etcd"),
      (e: any) => e.code === "CONFIG_INVALID" && /ha\.hcl:4\b/.test(e.message) && /storage "etcd" is not known/.test(e.message) && /storage "default" or storage "consul"/.test(e.message),
    );
  });
});
