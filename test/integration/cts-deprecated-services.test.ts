import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdir, readFile, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { startConsul } from "../support/consul.ts";
import { startRuntime, tempDir, waitFor, type TestRuntime } from "../support/cts.ts";
import { tools } from "../support/tools.ts";

const MODULE = fileURLToPath(new URL("../fixtures/cts-modules/record", import.meta.url));

describe("a task's deprecated services list whose service blocks differ (real Consul and OpenTofu)", () => {
  it("queries each listed service with its own block's filter and cts_user_defined_meta, as CTS, and follows changes", async () => {
    const consul = await startConsul();
    const tmp = await tempDir();
    const previousCli = process.env.TF_CLI_CONFIG_FILE;
    process.env.TF_CLI_CONFIG_FILE = tools().cliConfig;
    let rt: TestRuntime | undefined;
    try {
      await consul.register({ Name: "web", ID: "web-blue", Port: 80, Tags: ["blue"] });
      await consul.register({ Name: "web", ID: "web-green", Port: 80, Tags: ["green"] });
      await consul.register({ Name: "api", ID: "api-1", Port: 9000, Tags: ["green"] });
      const bin = join(tmp.dir, "bin");
      await mkdir(bin);
      await symlink(tools().tofu, join(bin, "terraform"));
      const out = join(tmp.dir, "svc.json");
      await writeFile(join(tmp.dir, "svc.tfvars"), `prefix = "p"\nout    = "${out}"\n`);
      const file = join(tmp.dir, "cts.hcl");
      await writeFile(
        file,
        `port        = 0
working_dir = "${join(tmp.dir, "work")}"
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
terraform_provider "local" {}

service {
  name                  = "web"
  id                    = "blue-web"
  filter                = "\\"blue\\" in Service.Tags"
  cts_user_defined_meta = { team = "web-team" }
}
service {
  name                  = "api"
  cts_user_defined_meta = { team = "api-team" }
}

task {
  name           = "svc"
  module         = "${MODULE}"
  providers      = ["local"]
  variable_files = ["${join(tmp.dir, "svc.tfvars")}"]
  services       = ["blue-web", "api"]
}
`,
      );
      rt = await startRuntime(file);
      const got = async () => JSON.parse(await readFile(out, "utf8").catch(() => "{}"));
      const seen = async () => Object.values<any>((await got()).services ?? {}).map((s) => `${s.id}:${s.cts_user_defined_meta?.team ?? "-"}`).sort();
      await waitFor(async () => (await seen()).length > 0, 180_000, "the first apply");
      assert.deepEqual(await seen(), ["api-1:api-team", "web-blue:web-team"], "web through its block's filter, each service with its own block's meta");

      // A new blue web instance joins, through the same per-service query; a green one does not.
      await consul.register({ Name: "web", ID: "web-blue-2", Port: 81, Tags: ["blue"] });
      await consul.register({ Name: "web", ID: "web-green-2", Port: 81, Tags: ["green"] });
      await waitFor(async () => (await seen()).includes("web-blue-2:web-team"), 180_000, "the new blue instance applied");
      assert.deepEqual(await seen(), ["api-1:api-team", "web-blue-2:web-team", "web-blue:web-team"]);
    } catch (err) {
      process.stderr.write(`--- cts log (last 80 lines) ---\n${rt?.lines.slice(-80).join("\n")}\n`);
      throw err;
    } finally {
      await rt?.close();
      if (previousCli === undefined) delete process.env.TF_CLI_CONFIG_FILE;
      else process.env.TF_CLI_CONFIG_FILE = previousCli;
      await consul.stop();
      await tmp.cleanup();
    }
  });
});
