import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { startConsul } from "../support/consul.ts";
import { runTofu } from "../support/tofu.ts";
import { startRuntime, tempDir, writeConfig } from "../support/cts.ts";
import { createConsulClient } from "../../src/consul/client.ts";
import { createCatalogReader } from "../../src/consul/reader.ts";
import { toCtsServices } from "../../src/task/module-protocol.ts";

const MODULE = fileURLToPath(new URL("../../modules/cts-echo", import.meta.url));

describe("coming from CTS", () => {
  it("a ModuleTask plans as a no-op on the state CTS left (same module name, workspace and backend path)", async () => {
    const consul = await startConsul();
    const tmp = await tempDir();
    try {
      await consul.register({ Name: "api", ID: "api-1", Address: "10.1.0.1", Port: 9000, Tags: ["v1"] });
      const out = join(tmp.dir, "services.json");
      // What CTS generates for task "echo": a root module calling the task's module as module "echo",
      // with services passed through a variable, state in Consul at consul-terraform-sync/terraform.
      const root = join(tmp.dir, "cts-root");
      await mkdir(root);
      await writeFile(
        join(root, "main.tf"),
        `terraform {
  backend "consul" {
    path = "consul-terraform-sync/terraform"
    gzip = true
  }
}
variable "services" {
  type = any
}
module "echo" {
  source      = "${MODULE}"
  services    = var.services
  output_path = "${out}"
}
`,
      );
      const api = createConsulClient({ address: consul.address });
      const instances = await createCatalogReader(api).read({ kind: "services", query: { names: ["api"], passingOnly: true } });
      api.close();
      await writeFile(join(root, "terraform.tfvars.json"), JSON.stringify({ services: toCtsServices(instances) }));
      const env = { CONSUL_HTTP_ADDR: consul.address };
      for (const args of [["init", "-input=false"], ["workspace", "new", "echo"], ["apply", "-auto-approve", "-input=false"]]) {
        const r = await runTofu(root, args, env);
        assert.equal(r.exitCode, 0, `tofu ${args.join(" ")}: ${r.stderr}`);
      }

      const file = await writeConfig(tmp.dir, {
        consulAddress: consul.address,
        tasks: [`new ModuleTask({ name: "echo", condition: services({ names: ["api"] }), module: ${JSON.stringify(MODULE)}, variables: { output_path: ${JSON.stringify(out)} } })`],
      });
      const rt = await startRuntime(file, { mode: "inspect" });
      try {
        const [plan] = await rt.controller.inspect(["echo"]);
        assert.equal(plan!.ok, true, plan!.error?.message);
        assert.equal(plan!.result!.changesPresent, false, plan!.result!.output);
      } finally {
        await rt.close();
      }
    } finally {
      await consul.stop();
      await tmp.cleanup();
    }
  });
});
