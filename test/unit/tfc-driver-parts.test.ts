import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { stageRootModule } from "../../src/tfc/root-module.ts";
import { MANAGED_DESCRIPTION, taskVariables, variablesFingerprint } from "../../src/tfc/task-variables.ts";
import { workspaceName } from "../../src/tfc/task-workspace.ts";
import { TfcDriver } from "../../src/tfc/driver.ts";
import { newestCompatibleVersion } from "../../src/tfc/terraform-versions.ts";

describe("what the Terraform Cloud driver uploads", () => {
  it("the task's JSON without its backend, with the configured required_providers added (the task's own win)", async () => {
    const json = JSON.stringify({ "//": { metadata: { backend: "consul" } }, terraform: { backend: { consul: { path: "p" } }, required_providers: { local: { source: "hashicorp/local", version: "~> 2.5" } } }, resource: {} });
    const staged = await stageRootModule(json, "/nowhere", { local: { source: "other/local" }, random: { source: "hashicorp/random" } });
    try {
      assert.deepEqual(await readdir(staged.dir), ["main.tf.json"]);
      const up = JSON.parse(await readFile(join(staged.dir, "main.tf.json"), "utf8"));
      assert.deepEqual(up.terraform, { required_providers: { local: { source: "hashicorp/local", version: "~> 2.5" }, random: { source: "hashicorp/random" } } });
      assert.deepEqual(up["//"], { metadata: {} });
    } finally {
      await staged.dispose();
    }
  });

  it("copies each local module (relative to the task's folder) into modules/, leaving .terraform and state behind; registry sources stay", async () => {
    const root = await mkdtemp(join(tmpdir(), "cts-tfc-stage-"));
    try {
      const mod = join(root, "modules", "lb");
      await mkdir(join(mod, ".terraform"), { recursive: true });
      await mkdir(join(mod, "sub"), { recursive: true });
      await writeFile(join(mod, "main.tf"), "# lb");
      await writeFile(join(mod, "sub", "x.tf"), "# x");
      await writeFile(join(mod, "terraform.tfstate"), "{}");
      await writeFile(join(mod, ".terraform", "junk"), "x");
      const taskDir = join(root, "sync-tasks", "lb");
      const json = JSON.stringify({ module: { lb: { source: "../../modules/lb" }, again: { source: mod }, reg: { source: "hashicorp/consul/aws", version: "1.0.0" } } });
      const staged = await stageRootModule(json, taskDir);
      try {
        const up = JSON.parse(await readFile(join(staged.dir, "main.tf.json"), "utf8"));
        assert.deepEqual(up.module, { lb: { source: "./modules/lb-0" }, again: { source: "./modules/lb-0" }, reg: { source: "hashicorp/consul/aws", version: "1.0.0" } });
        assert.deepEqual((await readdir(join(staged.dir, "modules", "lb-0"))).sort(), ["main.tf", "sub"]);
      } finally {
        await staged.dispose();
      }
      await assert.rejects(stageRootModule(JSON.stringify({ module: { m: { source: "./missing" } } }), taskDir), { code: "TASK_INVALID" });
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });
});

describe("a task's environment as workspace variables", () => {
  const json = JSON.stringify({ variable: { aws: { type: "object({region = string})", sensitive: true }, token: { type: "string", sensitive: true } } });

  it("TF_VAR_ values are terraform variables (HCL for a declared object type), the rest env variables; all sensitive and marked as cts's", () => {
    const vars = taskVariables({ TF_VAR_aws: '{"region" = "eu-west-1"}', TF_VAR_token: "s3cr3t", AWS_PROFILE: "x" }, json);
    assert.deepEqual(
      vars.map((v) => [v.key, v.category, v.hcl, v.sensitive, v.description]),
      [["AWS_PROFILE", "env", false, true, MANAGED_DESCRIPTION], ["aws", "terraform", true, true, MANAGED_DESCRIPTION], ["token", "terraform", false, true, MANAGED_DESCRIPTION]],
    );
  });

  it("fingerprints values, so a changed secret is written again", () => {
    assert.notEqual(variablesFingerprint(taskVariables({ TF_VAR_token: "a" }, json)), variablesFingerprint(taskVariables({ TF_VAR_token: "b" }, json)));
    assert.equal(variablesFingerprint(taskVariables({ TF_VAR_token: "a" }, json)), variablesFingerprint(taskVariables({ TF_VAR_token: "a" }, json)));
  });
});

describe("workspace names and task folders", () => {
  it("is prefix + task name, refused when Terraform Cloud would refuse it", () => {
    assert.equal(workspaceName({ prefix: "cts-" }, "web"), "cts-web");
    assert.throws(() => workspaceName({ prefix: "a.b" }, "web"), { code: "TASK_NAME_INVALID" });
    assert.throws(() => workspaceName({ prefix: "" }, "x".repeat(91)), { code: "TASK_NAME_INVALID" });
  });

  it("keeps each task's folder under the working dir", () => {
    const d = new TfcDriver({ client: { hostname: "http://127.0.0.1:1", token: "t" }, organization: "o", prefix: "", tags: [], tagsAllowlist: [], tagsDenylist: [], workingDir: "/tmp/cts-work" });
    assert.equal(d.taskDir("web"), "/tmp/cts-work/web");
    assert.throws(() => d.taskDir("../x"), { code: "TASK_NAME_INVALID" });
    void d.close();
  });
});

describe("a task's Terraform Cloud settings on the daemon's main thread", () => {
  it("cross from the synthesis worker in the task's declaration (module tasks and task classes)", async () => {
    const { declareTask, taskFromDeclaration } = await import("../../src/task/declaration.ts");
    const { ModuleTask } = await import("../../src/task/module-task.ts");
    const { Task } = await import("../../src/task/task.ts");
    const { services } = await import("../../src/task/conditions.ts");
    const settings = { executionMode: "agent" as const, agentPoolName: "pool", terraformVersion: "1.9.0" };
    const mod = new ModuleTask({ name: "m", condition: services({ names: ["web"] }), module: "./x", terraformCloudWorkspace: settings });
    class Mine extends Task {
      constructor() {
        super({ name: "c", condition: services({ names: ["web"] }), terraformCloudWorkspace: settings });
      }
      synthesize() {}
    }
    for (const t of [mod, new Mine()]) assert.deepEqual(taskFromDeclaration(structuredClone(declareTask(t as never))).terraformCloudWorkspace, settings, t.name);
  });
});

describe("the Terraform version of a new workspace whose task names none", () => {
  const v = (version: string, flags: Partial<{ enabled: boolean; beta: boolean; deprecated: boolean }> = {}) => ({ version, enabled: true, beta: false, deprecated: false, ...flags });

  it("is the newest enabled, released, not deprecated version within CTS's constraint (>= 0.13.0, <= 1.14.3)", () => {
    assert.equal(newestCompatibleVersion([v("1.5.7"), v("1.10.0"), v("1.9.8")]), "1.10.0", "compared as numbers, not text");
    assert.equal(newestCompatibleVersion([v("1.12.2"), v("1.15.0"), v("1.14.3", { deprecated: true }), v("1.14.2", { beta: true }), v("1.14.1", { enabled: false }), v("1.14.0-rc1")]), "1.12.2");
    assert.equal(newestCompatibleVersion([v("0.12.31"), v("1.2"), v("latest")]), undefined, "none fits: the server's default is used");
    assert.equal(newestCompatibleVersion([]), undefined);
  });
});
