import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, readdir, readFile, readlink, rm, unlink } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createTerraformDriver } from "../../src/terraform/driver.ts";
import { GROUPS_DIR } from "../../src/terraform/group-file.ts";
import type { LocalTerraformDriver, TerraformDriverOptions } from "../../src/terraform/types.ts";
import { startConsul, type ConsulAgent } from "../support/consul.ts";
import { tools } from "../support/tools.ts";

const UNMANAGED = /Provider registry\.(opentofu\.org|terraform\.io)\/hashicorp\/local is overridden as an "unmanaged provider"/;

/** main.tf.json writing one file with hashicorp/local (relative path: resolved in the task folder, as with a normal launch). */
let backendPath = "cts-warm/terraform";
function fileConfig(content: string): string {
  return JSON.stringify({
    terraform: { backend: { consul: { path: backendPath, gzip: true } }, required_providers: { local: { source: "hashicorp/local", version: ">= 2.0" } } },
    resource: { local_file: { out: { filename: "out.txt", content } } },
  });
}

/** Live (non-zombie) processes running a provider binary or working inside `dir`. */
async function providerProcesses(dir: string): Promise<Array<{ pid: number; cmd: string }>> {
  const found: Array<{ pid: number; cmd: string }> = [];
  for (const name of await readdir("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = await readFile(`/proc/${name}/stat`, "utf8");
      if (stat.slice(stat.lastIndexOf(")") + 2).startsWith("Z")) continue;
      const cmd = (await readFile(`/proc/${name}/cmdline`, "utf8")).replace(/\0/g, " ");
      const cwd = await readlink(`/proc/${name}/cwd`);
      if (cwd.startsWith(dir)) found.push({ pid: Number(name), cmd });
    } catch {
      /* gone meanwhile */
    }
  }
  return found;
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

async function waitFor(what: string, check: () => boolean | Promise<boolean>, ms = 30_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe("warm providers (real Consul, real OpenTofu and Terraform 1.5.7)", () => {
  let consul: ConsulAgent;
  let root: string;
  const drivers: LocalTerraformDriver[] = [];
  const logs: string[] = [];

  const makeDriver = (name: string, over: Partial<TerraformDriverOptions> = {}) => {
    const { tofu, cliConfig } = tools();
    // Each driver keeps its state apart (tofu and terraform name the provider differently).
    backendPath = `cts-warm/${name}`;
    const d = createTerraformDriver({
      binary: tofu,
      workingDir: join(root, name),
      cliConfigFile: cliConfig,
      // TF_LOG makes Terraform say when it uses an unmanaged (reattached) provider.
      env: { CONSUL_HTTP_ADDR: consul.address, TF_LOG: "DEBUG" },
      killGraceMs: 3_000,
      log: (task, line) => logs.push(`${task}: ${line}`),
      ...over,
    });
    drivers.push(d);
    return d;
  };

  before(async () => {
    consul = await startConsul();
    root = await mkdtemp(join(tmpdir(), "cts-warm-"));
  });
  after(async () => {
    for (const d of drivers) await d.close();
    await consul?.stop();
    if (root) await rm(root, { recursive: true, force: true });
  });

  it("reattaches plan, apply and destroy to one warm process started from init's own binary, lock file unchanged", async () => {
    const driver = makeDriver("tofu");
    await driver.apply({ task: "web", json: fileConfig("v1") });
    const dir = driver.taskDir("web");
    const lock = await readFile(join(dir, ".terraform.lock.hcl"), "utf8");
    const [proc] = driver.warmProcesses();
    assert.ok(proc, "a warm provider is running after the first apply");
    const installed = await readlink(`/proc/${proc.pid}/exe`);
    const initChose = (await readdir(join(dir, ".terraform/providers/registry.opentofu.org/hashicorp/local"))).length;
    assert.equal(initChose, 1);
    assert.equal(proc.binary, installed, "the process runs the binary init installed");
    assert.match(installed, /terraform-provider-local_v/);
    assert.equal(proc.cwd, dir);

    logs.length = 0;
    const planned = await driver.plan({ task: "web", json: fileConfig("v2") });
    assert.equal(planned.changesPresent, true);
    assert.ok(logs.some((l) => UNMANAGED.test(l)), "the plan used the unmanaged provider");
    logs.length = 0;
    await driver.apply({ task: "web", json: fileConfig("v2") });
    assert.ok(logs.some((l) => UNMANAGED.test(l)), "the apply used the unmanaged provider");
    assert.equal(await readFile(join(dir, "out.txt"), "utf8"), "v2", "relative paths resolve in the task folder");
    logs.length = 0;
    const destroyed = await driver.destroy({ task: "web", json: fileConfig("v2") });
    assert.equal(destroyed.summary.destroy, 1);
    assert.ok(logs.some((l) => UNMANAGED.test(l)), "the destroy used the unmanaged provider");

    const [after] = driver.warmProcesses();
    assert.equal(after?.pid, proc.pid, "the same process served every command");
    assert.equal(after?.runs, 4);
    assert.ok(alive(proc.pid));
    assert.equal(await readFile(join(dir, ".terraform.lock.hcl"), "utf8"), lock);
    // Registered for the reaper's clean-up (a kill -9 of the daemon leaves no provider behind).
    const groups = (await readdir(join(root, "tofu", GROUPS_DIR))).filter((g) => g.endsWith(".json"));
    const recorded = await Promise.all(groups.map((g) => readFile(join(root, "tofu", GROUPS_DIR, g), "utf8").catch(() => "")));
    assert.ok(recorded.some((r) => r.includes(`"pgid":${proc.pid}`)), recorded.join("\n"));
  });

  it("gives parallel tasks separate processes and recycles one after maxRunsPerProcess", async () => {
    const driver = makeDriver("recycle", { warmProviders: { maxRunsPerProcess: 2 } });
    await Promise.all(["a", "b"].map((task) => driver.apply({ task, json: fileConfig(task) })));
    const procs = driver.warmProcesses();
    assert.equal(procs.length, 2);
    assert.notEqual(procs[0]!.pid, procs[1]!.pid, "no two commands share a process");
    const first = procs.find((p) => p.cwd === driver.taskDir("a"))!.pid;
    await driver.apply({ task: "a", json: fileConfig("a2") });
    await waitFor("the recycled process to exit", () => !alive(first));
    await driver.apply({ task: "a", json: fileConfig("a3") });
    const next = driver.warmProcesses().find((p) => p.cwd === driver.taskDir("a"));
    assert.ok(next && next.pid !== first, "a fresh process serves the third run");
  });

  it("retries a run once with a normal launch when the warm provider is gone, then stops warming that binary", async () => {
    const driver = makeDriver("fallback");
    await driver.apply({ task: "web", json: fileConfig("v1") });
    const [proc] = driver.warmProcesses();
    // The provider still runs but its socket vanished: Terraform cannot reach it (a transport failure).
    await unlink(proc!.reattach.Addr.String);
    logs.length = 0;
    const res = await driver.apply({ task: "web", json: fileConfig("v2") });
    assert.equal(res.changesPresent, true);
    assert.ok(logs.some((l) => /warm provider process failed this run/.test(l)), logs.join("\n"));
    assert.equal(await readFile(join(driver.taskDir("web"), "out.txt"), "utf8"), "v2");
    await waitFor("the broken process to end", () => !alive(proc!.pid));
    assert.deepEqual(driver.warmProcesses(), [], "the binary is cold now");

    // A provider killed while pooled: the next run still succeeds, launched the normal way.
    const other = makeDriver("killed");
    await other.apply({ task: "web", json: fileConfig("v1") });
    const [victim] = other.warmProcesses();
    process.kill(victim!.pid, "SIGKILL");
    await waitFor("the killed provider to be noticed", () => other.warmProcesses().length === 0);
    logs.length = 0;
    await other.apply({ task: "web", json: fileConfig("v2") });
    assert.ok(!logs.some((l) => UNMANAGED.test(l)), "launched normally");
    assert.equal(await readFile(join(other.taskDir("web"), "out.txt"), "utf8"), "v2");
  });

  it("leaves no provider process behind after close, and launches normally after it", async () => {
    const driver = makeDriver("close");
    await Promise.all(["a", "b"].map((task) => driver.apply({ task, json: fileConfig(task) })));
    const pids = driver.warmProcesses().map((p) => p.pid);
    assert.equal(pids.length, 2);
    await driver.close();
    assert.deepEqual(await providerProcesses(join(root, "close")), []);
    for (const pid of pids) assert.equal(alive(pid), false);
    await driver.apply({ task: "a", json: fileConfig("after") });
    assert.deepEqual(driver.warmProcesses(), []);
    assert.deepEqual(await providerProcesses(join(root, "close")), []);
  });

  it("ends a deleted task's warm process (coolDown)", async () => {
    const driver = makeDriver("delete");
    await driver.apply({ task: "gone", json: fileConfig("x") });
    const [proc] = driver.warmProcesses();
    await driver.coolDown("gone");
    assert.equal(alive(proc!.pid), false);
    assert.deepEqual(driver.warmProcesses(), []);
  });

  it("reattaches Terraform 1.5.7 under registry.terraform.io", async () => {
    const driver = makeDriver("terraform", { binary: tools().terraform });
    await driver.apply({ task: "web", json: fileConfig("v1") });
    const [proc] = driver.warmProcesses();
    assert.ok(proc);
    logs.length = 0;
    await driver.apply({ task: "web", json: fileConfig("v2") });
    assert.ok(logs.some((l) => /registry\.terraform\.io\/hashicorp\/local is overridden as an "unmanaged provider"/.test(l)), "terraform reattached");
    assert.equal(driver.warmProcesses()[0]?.pid, proc.pid);
    assert.equal(await readFile(join(driver.taskDir("web"), "out.txt"), "utf8"), "v2");
    await driver.close();
    assert.equal(alive(proc.pid), false);
  });
});
