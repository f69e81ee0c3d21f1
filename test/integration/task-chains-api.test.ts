import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { access, mkdir, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { startDaemonApi } from "../../src/daemon/api.ts";
import { startConsul, type ConsulAgent } from "../support/consul.ts";
import { startRuntime, tempDir, waitFor, type TestRuntime } from "../support/cts.ts";
import { CTS_BIN } from "../support/cts-process.ts";
import { http } from "../support/api.ts";
import { tools } from "../support/tools.ts";

/** A CTS module that outputs its member count. */
const POOL_MODULE = `
variable "services" {
  type = any
}

resource "terraform_data" "pool" {
  input = sort(keys(var.services))
}

output "member_count" {
  value = length(terraform_data.pool.output)
}
`;

/** A module that reads its upstream task's outputs through the variable cts passes. */
const FIREWALL_MODULE = `
variable "services" {
  type = any
}

variable "upstream_outputs" {
  type = any
}

resource "terraform_data" "rules" {
  input = var.upstream_outputs.pool.member_count
}

output "seen" {
  value = terraform_data.rules.output
}
`;

/** A module that only shows what its upstream task (firewall) output. */
const AUDIT_MODULE = `
variable "services" {
  type = any
}

variable "upstream_outputs" {
  type = any
}

output "firewall" {
  value = var.upstream_outputs.firewall
}
`;

/** A module whose destroy waits until the file `open` exists beside `started`, which it writes first. */
const slowDestroyModule = (gate: string) => `
variable "services" {
  type = any
}

resource "terraform_data" "records" {
  input = sort(keys(var.services))
  provisioner "local-exec" {
    when    = destroy
    command = "touch '${gate}/started'; while [ ! -e '${gate}/open' ]; do sleep 0.1; done"
  }
}
`;

/**
 * CTS #329 through the CTS-compatible API: a task created with `POST /v1/tasks` (or `cts task
 * create -task-file`) sets `cts_after`, runs after its upstream task with the module variable
 * `upstream_outputs`, and shows `cts_after` in GET; a bad one is a 400, and a task others run
 * after cannot be deleted (409).
 */
describe("task chains through the API: cts_after on POST /v1/tasks (real Consul, real OpenTofu)", () => {
  let consul: ConsulAgent;
  let tmp: { dir: string; cleanup(): Promise<void> };
  let rt: TestRuntime | undefined;
  let api: { url: string; stop: () => Promise<void> } | undefined;
  const call = (method: string, path: string, body?: unknown) => http(api!.url, method, path, body);
  const status = async (task: string) => (await call("GET", `/v1/status/tasks/${task}?include=events`)).body[task];
  const runs = (task: string) => rt!.controller.taskRuns?.(task) ?? [];
  const moduleDir = (name: string) => join(tmp.dir, "modules", name);
  const firewall = (extra: Record<string, unknown> = {}) => ({
    name: "firewall",
    module: moduleDir("firewall"),
    condition: { services: { names: ["web"] } },
    buffer_period: { enabled: false },
    cts_after: ["pool"],
    ...extra,
  });
  /** Runs the CLI against the daemon; stdin is not a terminal. */
  const cts = (args: string[]): Promise<{ code: number; stdout: string; stderr: string }> =>
    new Promise((resolve) =>
      execFile(process.execPath, [CTS_BIN, ...args], { env: { ...process.env, CTS_ADDRESS: api!.url } }, (err, stdout, stderr) =>
        resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
      ),
    );

  before(async () => {
    consul = await startConsul();
    tmp = await tempDir("cts-chains-api-");
    await consul.register({ Name: "web", ID: "web-1", Address: "10.0.0.1", Port: 80 });
    await mkdir(join(tmp.dir, "gate"));
    for (const [name, text] of [["pool", POOL_MODULE], ["firewall", FIREWALL_MODULE], ["audit", AUDIT_MODULE], ["dns", slowDestroyModule(join(tmp.dir, "gate"))]] as const) {
      await mkdir(moduleDir(name), { recursive: true });
      await writeFile(join(moduleDir(name), "main.tf"), text);
    }
    const bin = join(tmp.dir, "bin");
    await mkdir(bin);
    await symlink(tools().tofu, join(bin, "terraform"));
    const file = join(tmp.dir, "cts.hcl");
    // The upstream task is the config's; the downstream ones are created through the API.
    await writeFile(
      file,
      `port        = 0
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
  module = "${moduleDir("pool")}"
  condition "services" {
    names = ["web"]
  }
}
`,
    );
    rt = await startRuntime(file);
    api = await startDaemonApi(rt, { port: 0 }, { register: false });
    await waitFor(async () => (await status("pool"))?.outputs?.values?.member_count?.value === 1, 120_000, "pool's first apply");
  });
  after(async () => {
    await api?.stop();
    await rt?.close();
    await consul?.stop();
    await tmp?.cleanup();
  });

  it("creates a task with cts_after, and GET shows it (a task without one answers as before)", async () => {
    const res = await call("POST", "/v1/tasks?run=now", { task: firewall() });
    assert.equal(res.status, 201, res.text);
    assert.deepEqual(res.body.task.cts_after, ["pool"]);
    assert.ok(res.body.run, "it ran (run=now)");
    assert.deepEqual((await call("GET", "/v1/tasks/firewall")).body.task.cts_after, ["pool"]);
    const pool = (await call("GET", "/v1/tasks/pool")).body.task;
    assert.equal("cts_after" in pool, false, "no new key for a task without a chain");
    const list = (await call("GET", "/v1/tasks")).body.tasks as Array<{ name: string; cts_after?: string[] }>;
    assert.deepEqual(Object.fromEntries(list.map((t) => [t.name, t.cts_after])), { pool: undefined, firewall: ["pool"] });
    // The dashboard shows it too (its state answer: `after`, empty for a task without one).
    const ui = (await call("GET", "/ui/state")).body.tasks as Array<{ name: string; after: string[] }>;
    assert.deepEqual(Object.fromEntries(ui.map((t) => [t.name, t.after])), { pool: [], firewall: ["pool"] });
    // Its first run read pool's outputs through the module variable upstream_outputs.
    await waitFor(async () => (await status("firewall"))?.outputs?.values?.seen?.value === 1, 120_000, "firewall with pool's output");
  });

  it("a catalog change runs the upstream task, then the API task with the new outputs", async () => {
    await consul.register({ Name: "web", ID: "web-2", Address: "10.0.0.2", Port: 80 });
    await waitFor(async () => (await status("firewall"))?.outputs?.values?.seen?.value === 2, 120_000, "firewall with pool's second output");
    const newest = await waitFor(() => runs("firewall").find((r) => r.outcome === "applied" && Date.parse(r.start_time) >= Date.parse(runs("pool")[0]!.start_time)), 30_000, "firewall's run after pool's");
    assert.ok(Date.parse(newest!.start_time) >= Date.parse(runs("pool")[0]!.end_time), "firewall's run started after pool's ended");
  });

  it("answers 400 for a cts_after naming no task (with the name meant), the task itself, or twice the same task", async () => {
    const unknown = await call("POST", "/v1/tasks", { task: firewall({ name: "dns", cts_after: ["pol"] }) });
    assert.equal(unknown.status, 400, unknown.text);
    assert.match(unknown.body.error.message, /task\.cts_after\[0\] names task 'pol', which does not exist\. Did you mean 'pool'\?/);
    const self = await call("POST", "/v1/tasks", { task: firewall({ name: "dns", cts_after: ["dns"] }) });
    assert.equal(self.status, 400);
    assert.match(self.body.error.message, /task\.cts_after\[0\] names the task itself \('dns'\)/);
    const { cts_after: _, ...plain } = firewall({ name: "dns" });
    const twice = await call("POST", "/v1/tasks", { task: { ...plain, CTS_AFTER: ["pool", "pool"] } });
    assert.equal(twice.status, 400);
    assert.match(twice.body.error.message, /task\.cts_after\[1\] names 'pool' twice/);
    assert.equal((await call("GET", "/v1/tasks/dns")).status, 404, "nothing was created");
  });

  it("cts task create -task-file takes cts_after in the HCL task block", async () => {
    const file = join(tmp.dir, "audit.hcl");
    await writeFile(
      file,
      `task "audit" {
  module    = "${moduleDir("audit")}"
  enabled   = false
  cts_after = ["firewall"]
  condition "services" {
    names = ["web"]
  }
}
`,
    );
    const r = await cts(["task", "create", "-task-file", file, "-auto-approve"]);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual((await call("GET", "/v1/tasks/audit")).body.task.cts_after, ["firewall"]);
    // `cts task list` gains an AFTER column once a task runs after others.
    const list = await cts(["task", "list"]);
    assert.equal(list.code, 0, list.stderr);
    assert.match(list.stdout, /^NAME\s+ENABLED\s+STATUS\s+ORIGIN\s+MODULE\s+CONDITION\s+AFTER$/m);
    assert.match(list.stdout, /^pool\s+true\s+successful\s+config\s+\S+\s+services web\s+-$/m);
    assert.match(list.stdout, /^audit\s+false\s+\S+\s+api\s+\S+\s+services web\s+firewall$/m);
  });

  it("answers 400 with the path when a PATCH would close a circle", async () => {
    const res = await call("PATCH", "/v1/tasks/firewall", { cts_after: ["pool", "audit"] });
    assert.equal(res.status, 400, res.text);
    assert.match(res.body.error.message, /task\.cts_after makes a circle of tasks: firewall → audit → firewall/);
    assert.deepEqual((await call("GET", "/v1/tasks/firewall")).body.task.cts_after, ["pool"], "unchanged");
  });

  it("refuses to delete a task others run after (409, naming them and the fix); deletes it once none does", async () => {
    const pool = await call("DELETE", "/v1/tasks/pool");
    assert.equal(pool.status, 409, pool.text);
    assert.match(pool.body.error.message, /task 'pool' cannot be deleted: task 'firewall' runs after it and reads its outputs.*Delete 'firewall' first, or take 'pool' out of its cts_after/);
    const cli = await cts(["task", "delete", "firewall", "-auto-approve"]);
    assert.notEqual(cli.code, 0);
    assert.match(cli.stderr, /task 'firewall' cannot be deleted: task 'audit' runs after it/);
    assert.doesNotMatch(cli.stdout, /will be deleted/, "refused before it asks");
    assert.equal((await call("GET", "/v1/tasks/firewall")).status, 200, "firewall is still there");
    assert.equal((await call("DELETE", "/v1/tasks/audit")).status, 202);
    assert.equal((await call("DELETE", "/v1/tasks/firewall")).status, 202);
    assert.equal((await call("DELETE", "/v1/tasks/pool")).status, 202, "nothing runs after pool any more");
  });

  it("refuses a task after one whose delete is under way (409), so no task is left reading outputs that are gone", async () => {
    const gate = join(tmp.dir, "gate");
    const { cts_after: _, ...dns } = firewall({ name: "dns", module: moduleDir("dns") });
    assert.equal((await call("POST", "/v1/tasks?run=now", { task: dns })).status, 201);
    // Its destroy waits at the gate: the DELETE is under way until the test opens it.
    const deleting = call("DELETE", "/v1/tasks/dns?destroy=true");
    await waitFor(() => access(join(gate, "started")).then(() => true, () => false), 120_000, "dns's destroy under way");
    const after = await call("POST", "/v1/tasks", { task: firewall({ name: "records", cts_after: ["dns"] }) });
    assert.equal(after.status, 409, after.text);
    assert.match(after.body.error.message, /cts_after\[0\] names task 'dns', which is being deleted: a task cannot run after it\. Remove 'dns' from cts_after, or create 'dns' again \(once its delete has ended\)/);
    await writeFile(join(gate, "open"), "");
    const deleted = await deleting;
    assert.equal(deleted.status, 202, deleted.text);
    assert.equal(deleted.body.destroyed, 1);
    assert.equal((await call("GET", "/v1/tasks/records")).status, 404, "nothing was created");
  });
});
