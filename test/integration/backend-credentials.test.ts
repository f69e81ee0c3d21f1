import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { mkdir, readdir, readFile, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { execa } from "execa";
import { loadConfig } from "../../src/config/load.ts";
import { runDoctor } from "../../src/doctor/doctor.ts";
import { startConsul } from "../support/consul.ts";
import { tempDir } from "../support/cts.ts";
import { CTS_BIN } from "../support/cts-process.ts";
import { tools } from "../support/tools.ts";

const MODULE = fileURLToPath(new URL("../fixtures/cts-modules/record", import.meta.url));
const POLICY = fileURLToPath(new URL("../../examples/acl/cts-policy.hcl", import.meta.url));

/** Every file below `dir`, recursively. */
async function allFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...(await allFiles(p)));
    else if (e.isFile()) out.push(p);
  }
  return out;
}

describe("credentials in a CTS backend block (real Consul with ACLs, real OpenTofu)", () => {
  it("backend \"consul\" { access_token }: the state is kept with that token, which is in no file of the working dir and in no log line", async () => {
    const management = randomUUID();
    const consul = await startConsul({
      extraConfig: `acl {\n  enabled = true\n  default_policy = "deny"\n  tokens {\n    initial_management = "${management}"\n  }\n}\n`,
      headers: { "X-Consul-Token": management },
    });
    const tmp = await tempDir();
    try {
      // cts's own token may watch but not write the state; the backend's token may only keep state.
      const rules = await readFile(POLICY, "utf8");
      await consul.api("PUT", "/v1/acl/policy", { Name: "watch", Rules: rules.replace(/key_prefix "consul-terraform-sync\/" \{\s*policy = "write"\s*\}/, "") });
      await consul.api("PUT", "/v1/acl/policy", { Name: "state", Rules: 'key_prefix "consul-terraform-sync/" {\n  policy = "write"\n}\nsession_prefix "" {\n  policy = "write"\n}\n' });
      const watchToken = (await consul.api("PUT", "/v1/acl/token", { Description: "watch", Policies: [{ Name: "watch" }] })).SecretID as string;
      const stateToken = (await consul.api("PUT", "/v1/acl/token", { Description: "state", Policies: [{ Name: "state" }] })).SecretID as string;
      await consul.register({ Name: "api", ID: "api-1", Address: "10.1.0.1", Port: 9000 });

      const bin = join(tmp.dir, "bin");
      await mkdir(bin);
      await symlink(tools().tofu, join(bin, "terraform"));
      const out = join(tmp.dir, "svc.json");
      await writeFile(join(tmp.dir, "svc.tfvars"), `prefix = "p"\nports  = [80]\nout    = "${out}"\n`);
      const config = (accessToken: string | undefined) => `port        = 0
working_dir = "work"

consul {
  address = "${consul.address}"
  token   = "${watchToken}"
  service_registration {
    enabled = false
  }
}

driver "terraform" {
  path = "${bin}"
  backend "consul" {
${accessToken ? `    access_token = "${accessToken}"\n` : ""}  }
  required_providers {
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
  variable_files = ["${join(tmp.dir, "svc.tfvars")}"]
  condition "services" {
    names = ["api"]
  }
}
`;
      const env: NodeJS.ProcessEnv = { ...process.env, TF_CLI_CONFIG_FILE: tools().cliConfig, CHECKPOINT_DISABLE: "1" };
      delete env.CONSUL_HTTP_TOKEN;
      const once = (file: string) => execa(process.execPath, [CTS_BIN, "start", "-config-file", file, "-once", "-log-level", "debug"], { cwd: tmp.dir, env, reject: false, all: true, timeout: 300_000 });

      // Without the backend's token, Terraform keeps state with cts's own token, which may not write it.
      await writeFile(join(tmp.dir, "without.hcl"), config(undefined));
      const denied = await once(join(tmp.dir, "without.hcl"));
      assert.notEqual(denied.exitCode, 0, `the watch token alone cannot keep the state:\n${denied.all}`);
      assert.match(denied.all, /Permission denied|permission denied|403/, denied.all);

      await writeFile(join(tmp.dir, "cts.hcl"), config(stateToken));
      const ok = await once(join(tmp.dir, "cts.hcl"));
      assert.equal(ok.exitCode, 0, ok.all);
      assert.match(await readFile(out, "utf8"), /api-1/, "the module ran");
      const state = await consul.api("GET", "/v1/kv/consul-terraform-sync/terraform-env:svc");
      assert.equal(state.length, 1, "the state is kept at CTS's path, with the backend's token");

      assert.ok(!ok.all.includes(stateToken) && !denied.all.includes(stateToken), "the backend token is in no log line");
      const main = JSON.parse(await readFile(join(tmp.dir, "work", "svc", "main.tf.json"), "utf8"));
      assert.deepEqual(main.terraform.backend, { consul: { path: "consul-terraform-sync/terraform", gzip: true } }, "main.tf.json holds the backend without its token");
      const files = await allFiles(join(tmp.dir, "work"));
      assert.ok(files.some((f) => f.endsWith(join(".terraform", "terraform.tfstate"))), "init recorded the backend");
      for (const f of files) assert.ok(!(await readFile(f)).includes(stateToken), `the backend token is not in ${f}`);

      // cts doctor probes the state path and the session with the token Terraform keeps state with.
      const doctor = async (file: string) => new Map((await runDoctor(await loadConfig(file))).map((r) => [r.name, r]));
      const withToken = await doctor(join(tmp.dir, "cts.hcl"));
      assert.equal(withToken.get("state")?.ok, true, JSON.stringify(withToken.get("state")));
      assert.equal(withToken.get("session")?.ok, true, JSON.stringify(withToken.get("session")));
      const without = await doctor(join(tmp.dir, "without.hcl"));
      assert.equal(without.get("state")?.ok, false, "cts's own token may not write the state");
      assert.ok(!JSON.stringify([...withToken.values(), ...without.values()]).includes(stateToken), "doctor shows no token");
    } finally {
      await consul.stop();
      await tmp.cleanup();
    }
  });
});
