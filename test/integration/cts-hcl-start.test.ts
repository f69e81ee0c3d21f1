import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdir, readFile, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { execa } from "execa";
import { startConsul } from "../support/consul.ts";
import { tempDir, waitFor } from "../support/cts.ts";
import { CTS_BIN } from "../support/cts-process.ts";
import { tools } from "../support/tools.ts";

const MODULE = fileURLToPath(new URL("../fixtures/cts-modules/record", import.meta.url));

describe("cts start with a CTS configuration", () => {
  it("runs four HCL tasks (services, catalog-services, consul-kv, schedule; variable_files, providers, module_input; HCL 1 strings with ${…}) with -config-file, then plans no changes with -config-dir -inspect", async () => {
    const consul = await startConsul();
    const tmp = await tempDir();
    try {
      await consul.register({ Name: "api", ID: "api-1", Address: "10.1.0.1", Port: 9000, Tags: ["v1"] });
      await consul.register({ Name: "web", ID: "web-1", Port: 80 });
      await consul.api("PUT", "/v1/kv/cfg/app", "blue");
      // CTS's driver.path is the directory holding a `terraform` binary.
      const bin = join(tmp.dir, "bin");
      await mkdir(bin);
      await symlink(tools().tofu, join(bin, "terraform"));
      const conf = join(tmp.dir, "conf");
      await mkdir(conf);
      // A .tfvars file is HCL 2: `$${` is a literal `${`, which must reach the module as text.
      await writeFile(join(tmp.dir, "common.tfvars"), 'prefix = "from-file $${x} %%{y}"\nports  = [80, 443]\n');
      await writeFile(
        join(conf, "global.hcl"),
        `log_level   = "INFO"
port        = 0
working_dir = "work"

buffer_period {
  enabled = false
}

consul {
  address = "${consul.address}"
}

driver "terraform" {
  path = "${bin}"
  required_providers {
    local = {
      source = "hashicorp/local"
    }
  }
}

terraform_provider "local" {
  task_env {
    CTS_TEST_TASK_ENV = "{{ env \\"HOME\\" }}"
  }
}
`,
      );
      const task = (name: string, body: string) => `
task {
  name           = "${name}"
  module         = "${MODULE}"
  providers      = ["local"]
  variable_files = ["common.tfvars", "${name}.tfvars"]
${body}
}
`;
      for (const n of ["svc", "cat", "kv", "sched"]) await writeFile(join(tmp.dir, `${n}.tfvars`), `out = "${join(tmp.dir, `${n}.json`)}"\n`);
      await writeFile(
        join(conf, "tasks.hcl"),
        task("svc", `  description = "records \${services} %{x}"\n  condition "services" {\n    names = ["api"]\n    filter = "Service.Tags not contains \\"\${none}\\""\n  }`) +
          task("cat", `  condition "catalog-services" {\n    regexp = "^(api|web)$"\n  }`) +
          task("kv", `  condition "consul-kv" {\n    path    = "cfg/"\n    recurse = true\n  }\n  module_input "services" {\n    names = ["web"]\n  }`) +
          task("sched", `  condition "schedule" {\n    cron = "0 0 1 1 *"\n  }\n  module_input "consul-kv" {\n    path = "cfg/app"\n  }`),
      );
      const env = { ...process.env, TF_CLI_CONFIG_FILE: tools().cliConfig, CHECKPOINT_DISABLE: "1" };
      const once = await execa(process.execPath, [CTS_BIN, "start", "-config-file", join(conf, "global.hcl"), "-config-file=" + join(conf, "tasks.hcl"), "-once"], {
        cwd: tmp.dir,
        env,
        reject: false,
        timeout: 300_000,
      });
      assert.equal(once.exitCode, 0, `cts start -once:\n${once.stdout}\n${once.stderr}`);
      const got = async (n: string) => JSON.parse(await readFile(join(tmp.dir, `${n}.json`), "utf8"));
      const svc = await got("svc");
      assert.equal(svc.prefix, "from-file ${x} %{y}", "a variable's ${ reaches the module as text");
      assert.deepEqual(svc.ports, [80, 443]);
      assert.deepEqual(Object.values<any>(svc.services).map((s) => s.id), ["api-1"]);
      assert.deepEqual(svc.consul_kv, {});
      const cat = await got("cat");
      assert.deepEqual(cat.catalog_services, { api: ["v1"], web: [] });
      assert.deepEqual(cat.services, {}, "services is passed as an empty map when not used");
      const kv = await got("kv");
      assert.deepEqual(kv.consul_kv, { "cfg/app": "blue" });
      assert.deepEqual(Object.values<any>(kv.services).map((s) => s.id), ["web-1"]);
      const sched = await got("sched");
      assert.deepEqual(sched.consul_kv, { "cfg/app": "blue" });
      assert.deepEqual(sched.services, {});
      const mainJson = await readFile(join(tmp.dir, "work", "svc", "main.tf.json"), "utf8");
      assert.deepEqual(JSON.parse(mainJson).provider, { local: [{}] }, "the terraform_provider block is in the root module");
      assert.doesNotMatch(mainJson, /CTS_TEST_TASK_ENV/, "task_env stays in the environment");

      const inspect = await execa(process.execPath, [CTS_BIN, "start", "--config-dir", conf, "-inspect"], { cwd: tmp.dir, env, reject: false, timeout: 300_000 });
      assert.equal(inspect.exitCode, 0, `cts start -inspect found changes or failed:\n${inspect.stdout}\n${inspect.stderr}`);
      assert.match(inspect.stdout, /Task 'sched': no changes/);
      const one = await execa(process.execPath, [CTS_BIN, "start", "-config-dir=" + conf, "-inspect-task", "kv"], { cwd: tmp.dir, env, reject: false, timeout: 300_000 });
      assert.equal(one.exitCode, 0, `${one.stdout}\n${one.stderr}`);
      assert.deepEqual([...one.stdout.matchAll(/Task '([^']+)'/g)].map((m) => m[1]), ["kv"]);

      // The daemon (synthesis in a worker that reads the same CTS files) follows a KV change.
      const daemon = execa(process.execPath, [CTS_BIN, "start", "-config-dir", conf], { cwd: tmp.dir, env, reject: false, all: true });
      try {
        await consul.api("PUT", "/v1/kv/cfg/app", "green");
        await waitFor(async () => (await got("kv")).consul_kv["cfg/app"] === "green", 120_000, "the daemon to apply the KV change");
      } finally {
        daemon.kill("SIGTERM");
        const res = await daemon;
        assert.equal(res.exitCode, 0, res.all);
      }
    } finally {
      await consul.stop();
      await tmp.cleanup();
    }
  });
});
