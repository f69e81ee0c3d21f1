import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { mkdir, readdir, readFile, stat, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { execa } from "execa";
import { startConsul, type ConsulAgent } from "../support/consul.ts";
import { tempDir } from "../support/cts.ts";
import { CTS_BIN } from "../support/cts-process.ts";
import { writeCtsRootModule } from "../support/cts-root-module.ts";
import { runTofu } from "../support/tofu.ts";
import { tools } from "../support/tools.ts";

const MODULE = fileURLToPath(new URL("../fixtures/cts-modules/record", import.meta.url));
const BACKUP = "consul-terraform-sync-backup";

/**
 * The switch from CTS, for real: CTS's root module for task "svc" laid out in `<working_dir>/svc`
 * exactly as CTS writes it, initialized and applied with CTS's own command sequence; then `cts
 * start` with the same HCL config, first `-inspect`, then `-once`.
 */
async function switchFromCts(backend: "consul" | "local", taskWorkingDir?: string): Promise<void> {
  const consul: ConsulAgent = await startConsul();
  const tmp = await tempDir();
  try {
    await consul.register({ Name: "api", ID: "api-1", Address: "10.1.0.1", Port: 9000, Tags: ["v1"] });
    const out = join(tmp.dir, "svc.json");
    const dir = join(tmp.dir, taskWorkingDir ?? "work/svc");
    await writeCtsRootModule(dir, consul, {
      name: "svc",
      module: MODULE,
      condition: { services: ["api"] },
      variables: { prefix: "p", ports: [80, 443], out },
      providers: { local: {} },
      ...(backend === "local" ? { backend: `  backend "local" {\n  }\n` } : {}),
    });
    // Files a user put there by hand: one under a name CTS uses, without CTS's header.
    await writeFile(join(dir, "providers.tfvars"), "# my own notes, not CTS's\n");
    await writeFile(join(dir, "notes.txt"), "hand-written\n");
    const env = { CONSUL_HTTP_ADDR: consul.address };
    // CTS's sequence (client/terraform_cli.go): init, workspace new + select, apply.
    for (const args of [
      ["init", "-force-copy", "-input=false", "-backend=true", "-get=true", "-upgrade=false"],
      ["workspace", "new", "svc"],
      ["workspace", "select", "svc"],
      ["apply", "-auto-approve", "-input=false", "-lock=true", "-parallelism=10", "-refresh=true"],
    ]) {
      const r = await runTofu(dir, args, env);
      assert.equal(r.exitCode, 0, `CTS's tofu ${args.join(" ")}: ${r.stderr}`);
    }
    const output = await readFile(out);
    const ctsMain = await readFile(join(dir, "main.tf"), "utf8");
    const lock = await readFile(join(dir, ".terraform.lock.hcl"), "utf8");
    const notesBefore = await stat(join(dir, "notes.txt"));
    const stateFile = join(dir, "terraform.tfstate.d", "svc", "terraform.tfstate");
    const localState = backend === "local" ? await readFile(stateFile, "utf8") : undefined;

    // CTS's config, unchanged (driver.path holds a `terraform`: here the same tofu).
    const bin = join(tmp.dir, "bin");
    await mkdir(bin);
    await symlink(tools().tofu, join(bin, "terraform"));
    await writeFile(join(tmp.dir, "svc.tfvars"), `prefix = "p"\nports  = [80, 443]\nout    = "${out}"\n`);
    const config = join(tmp.dir, "cts.hcl");
    await writeFile(
      config,
      `port        = 0
working_dir = "work"

consul {
  address = "${consul.address}"
}

driver "terraform" {
  path = "${bin}"
${backend === "local" ? '  backend "local" {}\n' : ""}  required_providers {
    local = {
      source = "hashicorp/local"
    }
  }
}

terraform_provider "local" {}

task {
  name           = "svc"
  module         = "${MODULE}"
  providers      = ["local"]
  variable_files = ["svc.tfvars"]
${taskWorkingDir ? `  working_dir    = "${taskWorkingDir}"\n` : ""}  condition "services" {
    names = ["api"]
  }
}
`,
    );
    const ctsEnv = { ...process.env, TF_CLI_CONFIG_FILE: tools().cliConfig, CHECKPOINT_DISABLE: "1" };
    const inspect = await execa(process.execPath, [CTS_BIN, "start", "-config-file", config, "-inspect"], { cwd: tmp.dir, env: ctsEnv, reject: false, all: true, timeout: 300_000 });
    assert.equal(inspect.exitCode, 0, `the first plan on CTS's state shows changes or failed:\n${inspect.all}`);
    assert.match(inspect.all, /Task 'svc': no changes/);
    const once = await execa(process.execPath, [CTS_BIN, "start", "-config-file", config, "-once"], { cwd: tmp.dir, env: ctsEnv, reject: false, all: true, timeout: 300_000 });
    assert.equal(once.exitCode, 0, once.all);

    assert.deepEqual(await readFile(out), output, "the module's output is byte-identical");
    const logged = `${inspect.all}\n${once.all}`.split("\n").filter((l) => l.includes("took over the working directory of Consul-Terraform-Sync"));
    assert.equal(logged.length, 1, `logged once:\n${inspect.all}\n${once.all}`);
    assert.match(logged[0]!, new RegExp(`moved main\\.tf, variables\\.tf, variables\\.module\\.tf, terraform\\.tfvars, terraform\\.tfvars\\.tmpl, providers\\.auto\\.tfvars, variables\\.auto\\.tfvars, \\.terraform to ${join(dir, BACKUP)}`));

    const backup = join(dir, BACKUP);
    assert.deepEqual(
      (await readdir(backup)).sort(),
      [".terraform", ".terraform.lock.hcl", "main.tf", "providers.auto.tfvars", "terraform.tfvars", "terraform.tfvars.tmpl", "variables.auto.tfvars", "variables.module.tf", "variables.tf"],
    );
    assert.equal(await readFile(join(backup, "main.tf"), "utf8"), ctsMain, "CTS's files are kept as they were");
    assert.equal(await readFile(join(backup, ".terraform.lock.hcl"), "utf8"), lock);
    const left = (await readdir(dir)).sort();
    for (const name of ["main.tf", "variables.tf", "terraform.tfvars", ".terraform.lock.hcl", "providers.tfvars", "notes.txt", "main.tf.json"]) {
      assert.equal(left.includes(name), name !== "main.tf" && name !== "variables.tf" && name !== "terraform.tfvars", `${name} in ${left.join(", ")}`);
    }
    assert.equal(await readFile(join(dir, "providers.tfvars"), "utf8"), "# my own notes, not CTS's\n", "a user's file under a CTS name is not touched");
    assert.equal((await stat(join(dir, "notes.txt"))).mtimeMs, notesBefore.mtimeMs);
    if (taskWorkingDir) assert.equal(existsSync(join(tmp.dir, "work", "svc")), false, "the task works in its own folder only");
    if (backend === "local") {
      const after = JSON.parse(await readFile(stateFile, "utf8"));
      assert.equal(after.lineage, JSON.parse(localState!).lineage, "the local backend's state file stays where CTS kept it, and is the one used");
    } else {
      const state = await consul.api("GET", "/v1/kv/consul-terraform-sync/terraform-env:svc");
      assert.equal(state.length, 1, "state stays at CTS's path in Consul");
    }
  } finally {
    await consul.stop();
    await tmp.cleanup();
  }
}

describe("taking over a CTS working directory", () => {
  it("moves CTS's generated files aside, keeps the user's, and the first plan on CTS's state (Consul backend) has no changes", async () => {
    await switchFromCts("consul");
  });

  it("finds CTS's files in the task's own working_dir, relative to where cts starts as in CTS", async () => {
    await switchFromCts("consul", "legacy/svc");
  });

  it("does the same with CTS's local backend: the state file in the dir is kept and used", async () => {
    await switchFromCts("local");
  });
});
