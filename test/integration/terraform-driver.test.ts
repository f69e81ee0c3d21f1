import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, readdir, readFile, readlink, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";
import { createTerraformDriver } from "../../src/terraform/driver.ts";
import type { LocalTerraformDriver } from "../../src/terraform/types.ts";
import { startConsul, type ConsulAgent } from "../support/consul.ts";
import { tools } from "../support/tools.ts";
import { waitFor } from "../support/cts.ts";

const BACKEND = { consul: { path: "consul-terraform-sync/terraform", gzip: true } };

/**
 * main.tf.json writing one file. `second` adds a second provider (the same plugin under its
 * registry.terraform.io address: only hashicorp/local is in the offline mirror), which is a new
 * provider to install, so it needs `init`.
 */
function fileConfig(filename: string, content: string, opts: { second?: boolean; bogus?: boolean } = {}): string {
  const providers: Record<string, unknown> = { local: { source: "hashicorp/local", version: ">= 2.0" } };
  const resource: Record<string, Record<string, unknown>> = { local_file: { out: { filename, content, ...(opts.bogus ? { bogus: 1 } : {}) } } };
  if (opts.second) {
    providers.tflocal = { source: "registry.terraform.io/hashicorp/local" };
    resource.local_file!.marker = { provider: "tflocal", filename: `${filename}.marker`, content };
  }
  return JSON.stringify({ terraform: { backend: BACKEND, required_providers: providers }, resource });
}

/**
 * main.tf.json whose apply runs `sleep 4637` in a provisioner (a command to interrupt) for over an
 * hour: a test that uses it and ends within its own time limit shows the apply was stopped, not
 * waited out.
 */
function slowConfig(): string {
  return JSON.stringify({
    terraform: { backend: BACKEND },
    resource: { terraform_data: { slow: { provisioner: [{ "local-exec": { command: "sleep 4637; echo finished" } }] } } },
  });
}

/**
 * Waits until no process runs in `dir`. The driver SIGKILLs what a stopped command left in its
 * group as it returns, and the kernel ends those processes a moment later: wait for that, bounded.
 */
async function nothingLeftIn(dir: string): Promise<void> {
  let left: string[] = [];
  await waitFor(async () => (left = await processesIn(dir)).length === 0, 20_000, "the task's processes to end").catch((err: Error) => {
    throw new Error(`${err.message}; still running: ${left.join(", ")}`);
  });
}

/** PIDs of processes whose cwd is inside `dir` (tofu, its plugins, provisioner shells). */
async function processesIn(dir: string): Promise<string[]> {
  const found: string[] = [];
  for (const pid of await readdir("/proc")) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      const cwd = await readlink(`/proc/${pid}/cwd`);
      const cmd = (await readFile(`/proc/${pid}/cmdline`, "utf8")).replace(/\0/g, " ");
      if (cwd.startsWith(dir) || cmd.includes("sleep 4637")) found.push(`${pid} ${cmd}`);
    } catch {
      /* exited meanwhile, or not ours to read */
    }
  }
  return found;
}

describe("Terraform driver (real OpenTofu, real Consul)", () => {
  let consul: ConsulAgent;
  let root: string;
  let driver: LocalTerraformDriver;
  let out: string;
  const logs: string[] = [];
  const oldUmask = process.umask(0o077); // proves modes are set explicitly, not by umask

  before(async () => {
    consul = await startConsul();
    root = await mkdtemp(join(tmpdir(), "cts-driver-"));
    out = root;
    const { tofu, cliConfig } = tools();
    driver = createTerraformDriver({
      binary: tofu,
      workingDir: join(root, "sync-tasks"),
      cliConfigFile: cliConfig,
      env: { CONSUL_HTTP_ADDR: consul.address },
      killGraceMs: 3_000,
      log: (task, line) => logs.push(`${task}: ${line}`),
    });
  });
  after(async () => {
    process.umask(oldUmask);
    await consul?.stop();
    if (root) await rm(root, { recursive: true, force: true });
  });

  const web = (content: string, opts?: { second?: boolean; bogus?: boolean }) => ({
    task: "web",
    json: fileConfig(join(out, "web.txt"), content, opts),
    files: { "terraform.tfvars.json": "{}" },
  });
  const webState = async () => {
    const [entry] = await consul.api("GET", "/v1/kv/consul-terraform-sync/terraform-env:web");
    return JSON.parse(gunzipSync(Buffer.from(entry.Value, "base64")).toString("utf8")) as { resources: unknown[] };
  };

  it("initializes on the first apply and skips init on the next apply with the same providers", async () => {
    const first = await driver.apply(web("v1"));
    assert.equal(first.initialized, true);
    assert.deepEqual(first.summary, { add: 1, change: 0, destroy: 0 });
    assert.equal(first.changesPresent, true);
    assert.equal(await readFile(join(out, "web.txt"), "utf8"), "v1");
    assert.ok(logs.some((l) => l.startsWith("web: ") && l.includes("initialized")), logs.join("\n"));

    logs.length = 0;
    const lines: string[] = [];
    const second = await driver.apply(web("v1"), { onOutput: (l) => lines.push(l) });
    assert.equal(second.initialized, false);
    assert.equal(second.changesPresent, false);
    assert.ok(!logs.some((l) => /Initializing/.test(l)), logs.join("\n"));
    assert.ok(lines.some((l) => l.startsWith("Apply complete!")), lines.join("\n"));
  });

  it("writes the task dir 0750 and its files 0640 whatever the umask", async () => {
    const dir = driver.taskDir("web");
    assert.equal((await stat(dir)).mode & 0o777, 0o750);
    assert.equal((await stat(join(dir, "main.tf.json"))).mode & 0o777, 0o640);
    assert.equal((await stat(join(dir, "terraform.tfvars.json"))).mode & 0o777, 0o640);
  });

  it("plans no changes on unchanged state, and counts the changes after a content change", async () => {
    const same = await driver.plan(web("v1"));
    assert.equal(same.changesPresent, false);
    assert.deepEqual(same.summary, { add: 0, change: 0, destroy: 0 });

    const changed = await driver.plan(web("v2"));
    assert.equal(changed.changesPresent, true);
    // local_file content forces replacement: one add, one destroy.
    assert.deepEqual(changed.summary, { add: 1, change: 0, destroy: 1 });
    assert.match(changed.output, /local_file\.out must be replaced/);
    assert.match(changed.output, /"v2"/);
    assert.equal(await readFile(join(out, "web.txt"), "utf8"), "v1", "a plan changes nothing");
  });

  it("applies a content change and reports its counts", async () => {
    const res = await driver.apply(web("v2"));
    assert.deepEqual(res.summary, { add: 1, change: 0, destroy: 1 });
    assert.equal(await readFile(join(out, "web.txt"), "utf8"), "v2");
  });

  it("serializes two operations on one task instead of failing on the state lock", async () => {
    const [a, b] = await Promise.all([driver.apply(web("v2")), driver.plan(web("v2"))]);
    assert.equal(a.changesPresent, false);
    assert.equal(b.changesPresent, false);
  });

  it("re-initializes when the provider set changes", async () => {
    logs.length = 0;
    const res = await driver.apply(web("v2", { second: true }));
    assert.equal(res.initialized, true);
    assert.deepEqual(res.summary, { add: 1, change: 0, destroy: 0 });
    assert.ok(!logs.some((l) => l.includes("retrying")), "init ran up front, not as a repair after a failure");
  });

  it("repairs a working dir whose installed providers vanished by re-initializing once", async () => {
    await rm(join(driver.taskDir("web"), ".terraform", "providers"), { recursive: true });
    logs.length = 0;
    const res = await driver.apply(web("v2", { second: true }));
    assert.equal(res.initialized, true);
    assert.equal(res.changesPresent, false);
    assert.ok(logs.some((l) => l.includes("Required plugins are not installed")), logs.join("\n"));
  });

  it("fails with TERRAFORM_FAILED naming the task, the command and Terraform's error", async () => {
    await assert.rejects(driver.apply(web("v2", { second: true, bogus: true })), (err: any) => {
      assert.equal(err.code, "TERRAFORM_FAILED");
      assert.equal(err.task, "web");
      assert.match(err.message, /^Task 'web': `tofu apply` failed \(exit 1\): .*bogus/);
      assert.match(err.message, /cts inspect web/);
      return true;
    });
  });

  it("destroys the task's resources and empties its state", async () => {
    const res = await driver.destroy(web("v2", { second: true }));
    assert.deepEqual(res.summary, { add: 0, change: 0, destroy: 2 });
    await assert.rejects(stat(join(out, "web.txt")), { code: "ENOENT" });
    assert.deepEqual((await webState()).resources, []);
  });

  it("keeps applying after Consul lost the task's state (dev agent restart)", async () => {
    await driver.apply(web("v3"));
    await consul.restart();
    await assert.rejects(webState(), /404/);
    const res = await driver.apply(web("v3"));
    assert.equal(res.changesPresent, true);
    assert.equal((await webState()).resources.length, 1);
  });

  it("cancels a running apply: SIGINT to its process group, TERRAFORM_CANCELLED, nothing left running", { timeout: 120_000 }, async () => {
    const ac = new AbortController();
    let started!: () => void;
    const provisioning = new Promise<void>((r) => (started = r));
    const run = driver.apply({ task: "slow", json: slowConfig() }, { signal: ac.signal, onOutput: (l) => l.includes("Executing:") && started() });
    await provisioning;
    ac.abort();
    await assert.rejects(run, (err: any) => err.code === "TERRAFORM_CANCELLED" && err.task === "slow" && /tofu apply/.test(err.message));
    await nothingLeftIn(driver.taskDir("slow"));
  });

  it("stops an apply that runs past its timeout with TERRAFORM_TIMEOUT", { timeout: 120_000 }, async () => {
    await assert.rejects(driver.apply({ task: "slow", json: slowConfig() }, { timeoutMs: 2_000 }), (err: any) => err.code === "TERRAFORM_TIMEOUT" && /within 2s/.test(err.message));
    await nothingLeftIn(driver.taskDir("slow"));
  });

  it("refuses a task name that would escape the working directory", async () => {
    await assert.rejects(driver.apply({ task: "../web", json: "{}" }), (err: any) => err.code === "TASK_NAME_INVALID");
  });
});
