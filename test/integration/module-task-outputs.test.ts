import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdir, readFile, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { startDaemonApi } from "../../src/daemon/api.ts";
import { STATE_FOLDER } from "../../src/state/file-state.ts";
import { startConsul, type ConsulAgent } from "../support/consul.ts";
import { startRuntime, tempDir, waitFor, type TestRuntime } from "../support/cts.ts";
import { CTS_BIN } from "../support/cts-process.ts";
import { http } from "../support/api.ts";
import { tools } from "../support/tools.ts";

/** The value of the module's sensitive output: it must never show outside Terraform's own state. */
const TOKEN = "module-token-4be81d0c";

/** A CTS module as users write them, with outputs; built-in resources only (no provider to fetch). */
const MODULE = `
variable "services" {
  type = any
}

resource "terraform_data" "pool" {
  input = sort(keys(var.services))
}

output "member_ids" {
  description = "ids of the pool's members"
  value       = [for k, s in var.services : s.id]
}

output "member_count" {
  value = length(terraform_data.pool.output)
}

output "api_token" {
  value     = "${TOKEN}"
  sensitive = true
}
`;

/**
 * CTS #1046 for the tasks of a CTS configuration: a task's module declares outputs, and cts shows
 * them after each apply (the root module it generates re-exports them), the sensitive one redacted.
 */
describe("a CTS HCL task's module outputs (real Consul, real OpenTofu)", () => {
  let consul: ConsulAgent;
  let tmp: { dir: string; cleanup(): Promise<void> };
  let rt: TestRuntime | undefined;
  let api: { url: string; stop: () => Promise<void> } | undefined;
  const get = async (path: string) => http(api!.url, "GET", path);
  const status = async () => (await get("/v1/status/tasks/pool?include=events")).body.pool;
  const cts = (args: string[]): Promise<{ code: number; stdout: string; stderr: string }> =>
    new Promise((resolve) => {
      execFile(process.execPath, [CTS_BIN, ...args, "--http-addr", api!.url], (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }));
    });

  before(async () => {
    consul = await startConsul();
    tmp = await tempDir("cts-module-outputs-");
    await consul.register({ Name: "web", ID: "web-1", Address: "10.0.0.1", Port: 80 });
    const module = join(tmp.dir, "modules", "pool");
    await mkdir(module, { recursive: true });
    await writeFile(join(module, "main.tf"), MODULE);
    // CTS's driver.path is the directory holding a `terraform` binary.
    const bin = join(tmp.dir, "bin");
    await mkdir(bin);
    await symlink(tools().tofu, join(bin, "terraform"));
    const file = join(tmp.dir, "cts.hcl");
    await writeFile(
      file,
      `log_level   = "INFO"
port        = 0
working_dir = "${join(tmp.dir, "sync-tasks")}"

buffer_period {
  enabled = false
}

consul {
  address = "${consul.address}"
}

driver "terraform" {
  path = "${bin}"
}

task {
  name   = "pool"
  module = "${module}"
  condition "services" {
    names = ["web"]
  }
}
`,
    );
    rt = await startRuntime(file);
    api = await startDaemonApi(rt, { port: 0 }, { register: false });
    await waitFor(async () => (await status())?.outputs, 90_000, "the first apply's outputs");
  });
  after(async () => {
    await api?.stop();
    await rt?.close();
    await consul?.stop();
    await tmp?.cleanup();
  });

  it("shows the module's outputs in the task's status after an apply, the sensitive one redacted", async () => {
    const s = await status();
    assert.equal(s.status, "successful");
    assert.deepEqual(s.outputs.values.member_ids, { value: ["web-1"], type: ["tuple", ["string"]], sensitive: false });
    assert.deepEqual(s.outputs.values.member_count, { value: 1, type: "number", sensitive: false });
    assert.deepEqual(s.outputs.values.api_token, { value: "(sensitive)", type: "string", sensitive: true });
    const [newest] = s.events;
    assert.equal(newest.outputs.api_token.value, "(sensitive)");
  });

  it("writes the re-exported outputs into the root module, and nothing else beside CTS's module block", async () => {
    const json = JSON.parse(await readFile(join(tmp.dir, "sync-tasks", "pool", "main.tf.json"), "utf8"));
    assert.deepEqual(json.output, {
      api_token: { value: "${module.pool.api_token}", sensitive: true },
      member_count: { value: "${module.pool.member_count}" },
      member_ids: { value: "${module.pool.member_ids}" },
    });
    assert.deepEqual(Object.keys(json.module), ["pool"]);
  });

  it("reads them again after the next apply", async () => {
    await consul.register({ Name: "web", ID: "web-2", Address: "10.0.0.2", Port: 80 });
    const s = await waitFor(async () => {
      const st = await status();
      return st.outputs?.values.member_count.value === 2 ? st : undefined;
    }, 90_000, "the outputs of the second apply");
    assert.deepEqual([...s.outputs.values.member_ids.value].sort(), ["web-1", "web-2"]);
  });

  it("cts task outputs prints them, and the sensitive value shows nowhere", async () => {
    const out = await cts(["task", "outputs", "pool"]);
    assert.equal(out.code, 0, out.stderr);
    assert.match(out.stdout, /member_count\s+2\s+no/);
    assert.match(out.stdout, /api_token\s+\(sensitive\)\s+yes/);
    assert.ok(!out.stdout.includes(TOKEN));
    for (const path of ["/v1/status/tasks?include=events", "/v1/tasks/pool/outputs", "/v1/tasks/pool/runs?limit=100", "/ui/state"]) {
      const res = await get(path);
      assert.equal(res.status, 200, `${path}: ${res.text}`);
      assert.ok(!res.text.includes(TOKEN), path);
    }
    const kept = await readFile(join(tmp.dir, "sync-tasks", STATE_FOLDER, "pool", "outputs.json"), "utf8");
    assert.ok(kept.includes("member_count") && !kept.includes(TOKEN));
    assert.ok(!rt!.lines.join("\n").includes(TOKEN), "nor in the log");
  });
});
