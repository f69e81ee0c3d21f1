import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { execFile } from "node:child_process";
import { mkdir, readFile, rm, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { startDaemonApi } from "../../src/daemon/api.ts";
import { startConsul, type ConsulAgent } from "../support/consul.ts";
import { PUBLIC_API, startRuntime, tempDir, waitFor, type TestRuntime } from "../support/cts.ts";
import { CTS_BIN } from "../support/cts-process.ts";
import { http } from "../support/api.ts";
import { tools } from "../support/tools.ts";

const CHAIN_TASKS = fileURLToPath(new URL("../fixtures/chain-tasks.ts", import.meta.url));
const read = (p: string) => readFile(p, "utf8").catch(() => "");
const sha256 = (s: string) => createHash("sha256").update(s).digest("hex");

/** A cts.config.ts whose task `reader` runs after `pool` (or, with `cycle`, two tasks after each other). */
async function writeChainConfig(dir: string, consulAddress: string, opts: { cycle?: boolean } = {}): Promise<string> {
  const t = tools();
  const file = join(dir, opts.cycle ? "cycle.config.ts" : "cts.config.ts");
  const tasks = opts.cycle
    ? `new PoolReader("x", ${JSON.stringify(join(dir, "x.txt"))}, "y"), new PoolReader("y", ${JSON.stringify(join(dir, "y.txt"))}, "x")`
    : `new PoolReader("reader", ${JSON.stringify(join(dir, "seen.txt"))}, "pool"), new PoolFile("pool", ${JSON.stringify(join(dir, "pool", "members.txt"))})`;
  await writeFile(
    file,
    `import { defineConfig } from ${JSON.stringify(PUBLIC_API)};
import { PoolFile, PoolReader } from ${JSON.stringify(CHAIN_TASKS)};
export default defineConfig({
  consul: { address: ${JSON.stringify(consulAddress)} },
  driver: { terraform: { binary: ${JSON.stringify(t.tofu)}, cliConfigFile: ${JSON.stringify(t.cliConfig)}, workingDir: ${JSON.stringify(join(dir, "sync-tasks"))} } },
  tasks: [${tasks}],
});
`,
  );
  return file;
}

/**
 * CTS #329: task chains in a cts.config.ts. `reader` runs after `pool` and reads its outputs: the
 * content hash of the file `pool` writes. A change applies `pool`, then `reader` with the new hash;
 * a failing `pool` skips `reader`, and the event says why; a circle is refused when cts loads.
 */
describe("task chains in cts.config.ts (real Consul, real OpenTofu)", () => {
  let consul: ConsulAgent;
  let tmp: { dir: string; cleanup(): Promise<void> };
  let rt: TestRuntime | undefined;
  let poolFile: string;
  let seenFile: string;
  const events = (task: string) => rt!.controller.events.list(task);
  const runs = (task: string) => rt!.controller.taskRuns?.(task) ?? [];

  before(async () => {
    consul = await startConsul();
    tmp = await tempDir("cts-chains-");
    poolFile = join(tmp.dir, "pool", "members.txt");
    seenFile = join(tmp.dir, "seen.txt");
    await consul.register({ Name: "web", ID: "web-1", Address: "10.0.0.1", Port: 80 });
    rt = await startRuntime(await writeChainConfig(tmp.dir, consul.address));
    await waitFor(async () => (await read(seenFile)) !== "", 120_000, "the first run of the chain");
  });
  after(async () => {
    await rt?.close();
    await consul?.stop();
    await tmp?.cleanup();
  });

  it("runs the upstream task first and gives the downstream one its outputs, never the sensitive one", async () => {
    assert.equal(await read(poolFile), "web-1\n");
    assert.equal(await read(seenFile), `${sha256("web-1\n")} 1 no-secret\n`);
    const reader = await waitFor(() => events("reader")[0], 30_000, "reader's event");
    const [pool] = events("pool");
    assert.ok(Date.parse(reader!.start_time) >= Date.parse(pool!.end_time), "reader started after pool ended");
  });

  it("a change applies the upstream task, then the downstream one with the new output", async () => {
    await consul.register({ Name: "web", ID: "web-2", Address: "10.0.0.2", Port: 80 });
    await waitFor(async () => (await read(seenFile)) === `${sha256("web-1\nweb-2\n")} 2 no-secret\n`, 120_000, "reader with pool's new hash");
    // reader watches 'web' too: its own trigger asked for the run, which waited for pool's.
    const history = await waitFor(() => (runs("reader").length >= 2 ? runs("reader") : undefined), 30_000, "reader's second run in its history");
    const newest = history![0];
    assert.equal(newest!.outcome, "applied");
    assert.ok(Date.parse(newest!.start_time) >= Date.parse(runs("pool")[0]!.end_time), "after pool's run ended");
  });

  it("cts synth gives the downstream task the outputs the daemon kept", async () => {
    const res = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) =>
      execFile(process.execPath, [CTS_BIN, "synth", "--config", join(tmp.dir, "cts.config.ts"), "--stdout", "reader"], (err, stdout, stderr) =>
        resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
      ),
    );
    assert.equal(res.code, 0, res.stderr);
    assert.match(res.stdout, new RegExp(`${sha256("web-1\nweb-2\n")} 2 no-secret`));
  });

  it("a failing upstream run skips the downstream one, and the event says why", async () => {
    // pool's file cannot be written any more: a folder stands where it was.
    await rm(poolFile, { force: true });
    await mkdir(poolFile);
    await consul.register({ Name: "web", ID: "web-3", Address: "10.0.0.3", Port: 80 });
    const skipped = await waitFor(() => (events("reader")[0]?.outcome === "skipped" ? events("reader")[0] : undefined), 120_000, "reader's skipped event");
    assert.equal(events("pool")[0]!.outcome, "failed");
    assert.equal(skipped!.success, false);
    assert.match(skipped!.error!.message, /was skipped: upstream task 'pool' failed/);
    assert.equal(rt!.controller.view("reader")!.status, "errored");
    assert.equal(await read(seenFile), `${sha256("web-1\nweb-2\n")} 2 no-secret\n`, "reader applied nothing");
    // pool can write again: its next run applies, and reader follows.
    await rm(poolFile, { recursive: true, force: true });
    await rt!.controller.runNow("pool");
    await waitFor(async () => (await read(seenFile)) === `${sha256("web-1\nweb-2\nweb-3\n")} 3 no-secret\n`, 120_000, "reader after pool recovered");
  });

  it("refuses a circle of tasks when the config loads, naming its path", async () => {
    const file = await writeChainConfig(tmp.dir, consul.address, { cycle: true });
    const res = await new Promise<{ code: number; stderr: string }>((resolve) =>
      execFile(process.execPath, [CTS_BIN, "once", "--config", file], (err, _out, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stderr })),
    );
    assert.equal(res.code, 2, res.stderr);
    assert.match(res.stderr, /tasks\[0\]\.after makes a circle of tasks: x → y → x/);
  });
});

/** A CTS module that outputs its member count; it fails to plan above 2 members. */
const POOL_MODULE = `
variable "services" {
  type = any
}

resource "terraform_data" "pool" {
  input = sort(keys(var.services))
  lifecycle {
    precondition {
      condition     = length(var.services) <= 2
      error_message = "the pool takes at most 2 members"
    }
  }
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

/** CTS #329 in a CTS configuration: `cts_after`, and a module task that gets the upstream outputs as `upstream_outputs`. */
describe("task chains in CTS HCL: cts_after and a module's upstream_outputs (real Consul, real OpenTofu)", () => {
  let consul: ConsulAgent;
  let tmp: { dir: string; cleanup(): Promise<void> };
  let rt: TestRuntime | undefined;
  let api: { url: string; stop: () => Promise<void> } | undefined;
  const status = async (task: string) => (await http(api!.url, "GET", `/v1/status/tasks/${task}?include=events`)).body[task];

  before(async () => {
    consul = await startConsul();
    tmp = await tempDir("cts-chains-hcl-");
    await consul.register({ Name: "web", ID: "web-1", Address: "10.0.0.1", Port: 80 });
    for (const [name, text] of [["pool", POOL_MODULE], ["firewall", FIREWALL_MODULE]] as const) {
      await mkdir(join(tmp.dir, "modules", name), { recursive: true });
      await writeFile(join(tmp.dir, "modules", name, "main.tf"), text);
    }
    const bin = join(tmp.dir, "bin");
    await mkdir(bin);
    await symlink(tools().tofu, join(bin, "terraform"));
    const file = join(tmp.dir, "cts.hcl");
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
  name      = "firewall"
  module    = "${join(tmp.dir, "modules", "firewall")}"
  cts_after = ["pool"]
  condition "services" {
    names = ["web"]
  }
}

task {
  name   = "pool"
  module = "${join(tmp.dir, "modules", "pool")}"
  condition "services" {
    names = ["web"]
  }
}
`,
    );
    rt = await startRuntime(file);
    api = await startDaemonApi(rt, { port: 0 }, { register: false });
    await waitFor(async () => (await status("firewall"))?.outputs?.values?.seen?.value === 1, 120_000, "firewall with pool's first output");
  });
  after(async () => {
    await api?.stop();
    await rt?.close();
    await consul?.stop();
    await tmp?.cleanup();
  });

  it("gives the module task its upstream task's outputs, and the new ones after a change", async () => {
    await consul.register({ Name: "web", ID: "web-2", Address: "10.0.0.2", Port: 80 });
    await waitFor(async () => (await status("firewall"))?.outputs?.values?.seen?.value === 2, 120_000, "firewall with pool's second output");
  });

  it("skips the module task when its upstream task fails, saying why in its status", async () => {
    await consul.register({ Name: "web", ID: "web-3", Address: "10.0.0.3", Port: 80 });
    const s = await waitFor(async () => {
      const st = await status("firewall");
      return st?.events?.[0]?.outcome === "skipped" ? st : undefined;
    }, 120_000, "firewall's skipped event");
    assert.equal(s.status, "errored");
    assert.match(s.events[0].error.message, /upstream task 'pool' failed/);
    assert.equal(s.outputs.values.seen.value, 2, "firewall kept what it had applied");
  });
});

/** A cts.config.ts whose task `reader` runs after `pool`, and every plan of `pool` waits for `cts approve`. */
async function writeApprovedChainConfig(dir: string, consulAddress: string): Promise<string> {
  const t = tools();
  const file = join(dir, "cts.config.ts");
  await writeFile(
    file,
    `import { defineConfig } from ${JSON.stringify(PUBLIC_API)};
import { PoolFile, PoolReader } from ${JSON.stringify(CHAIN_TASKS)};
export default defineConfig({
  consul: { address: ${JSON.stringify(consulAddress)} },
  driver: { terraform: { binary: ${JSON.stringify(t.tofu)}, cliConfigFile: ${JSON.stringify(t.cliConfig)}, workingDir: ${JSON.stringify(join(dir, "sync-tasks"))} } },
  tasks: [new PoolReader("reader", ${JSON.stringify(join(dir, "seen.txt"))}, "pool"), new PoolFile("pool", ${JSON.stringify(join(dir, "pool", "members.txt"))}, { approval: "always" })],
});
`,
  );
  return file;
}

/**
 * CTS #329 with an approval: `pool`'s plans wait for `cts approve`. Its held plan is rejected
 * through the API; its next run of the same inputs ends `rejected`, which skips `reader` (event,
 * history, status); once `pool` applies new inputs, `reader` runs with its outputs.
 */
describe("task chains: a rejected upstream run skips the downstream task (real Consul, real OpenTofu)", () => {
  let consul: ConsulAgent;
  let tmp: { dir: string; cleanup(): Promise<void> };
  let rt: TestRuntime | undefined;
  let api: { url: string; stop: () => Promise<void> } | undefined;
  let poolFile: string;
  let seenFile: string;
  const events = (task: string) => rt!.controller.events.list(task);
  const runs = (task: string) => rt!.controller.taskRuns?.(task) ?? [];
  const status = async (task: string) => (await http(api!.url, "GET", `/v1/status/tasks/${task}?include=events`)).body[task];
  const newest = (task: string, outcome: string, message?: RegExp) =>
    waitFor(() => {
      const [e] = events(task);
      return e?.outcome === outcome && (!message || message.test(e.error?.message ?? "")) ? e : undefined;
    }, 120_000, `${task}'s newest event to be ${outcome}${message ? ` (${message})` : ""}`);

  before(async () => {
    consul = await startConsul();
    tmp = await tempDir("cts-chains-rejected-");
    poolFile = join(tmp.dir, "pool", "members.txt");
    seenFile = join(tmp.dir, "seen.txt");
    await consul.register({ Name: "web", ID: "web-1", Address: "10.0.0.1", Port: 80 });
    rt = await startRuntime(await writeApprovedChainConfig(tmp.dir, consul.address));
    api = await startDaemonApi(rt, { port: 0 }, { register: false });
  });
  after(async () => {
    await api?.stop();
    await rt?.close();
    await consul?.stop();
    await tmp?.cleanup();
  });

  it("a held upstream plan skips the downstream task; rejecting it applies nothing", async () => {
    await newest("pool", "held");
    await newest("reader", "skipped", /upstream task 'pool' is held for approval/);
    const res = await http(api!.url, "POST", "/v1/tasks/pool/reject", {});
    assert.equal(res.status, 200, res.text);
    await newest("pool", "rejected");
    assert.equal((await status("pool")).held, undefined);
    assert.equal(await read(poolFile), "", "pool applied nothing");
    assert.equal(await read(seenFile), "", "reader applied nothing");
  });

  it("the upstream run of the rejected inputs ends rejected, and the downstream run is skipped: event, history and status say why", async () => {
    // A tag changes 'web' for both tasks, not pool's inputs: pool's run meets the rejected plan.
    const poolRuns = runs("pool").length;
    const before = new Set(events("reader").map((e) => e.id));
    await consul.register({ Name: "web", ID: "web-1", Address: "10.0.0.1", Port: 80, Tags: ["v2"] });
    await waitFor(() => (runs("pool").length > poolRuns ? runs("pool")[0] : undefined), 120_000, "pool's next run");
    assert.equal(runs("pool")[0]!.outcome, "rejected", "the rejected inputs are not planned again");
    const skipped = await newest("reader", "skipped", /was rejected/);
    assert.equal(skipped!.success, false);
    assert.equal(skipped!.error!.message, "Task 'reader': was skipped: upstream task 'pool' was rejected. It runs again once 'pool' applies.");
    // reader's own run for the tag (it may start before pool's ends) no longer says pool is held either.
    for (const e of events("reader").filter((x) => !before.has(x.id))) assert.match(e.error?.message ?? "", /upstream task 'pool' was rejected/);
    const [run] = runs("reader");
    assert.equal(run!.outcome, "skipped");
    assert.equal(run!.success, false);
    assert.match(run!.error ?? "", /upstream task 'pool' was rejected/);
    const s = await status("reader");
    // CTS's words for a task whose newest run failed: errored for one stored failure, critical for more.
    assert.ok(["errored", "critical"].includes(s.status), s.status);
    assert.equal(s.events[0].outcome, "skipped");
    // A run asked for meanwhile is skipped the same way, with the catalogue's code.
    const asked = await rt!.controller.runNow("reader");
    assert.equal(asked.outcome, "skipped");
    assert.equal(asked.error!.code, "TASK_UPSTREAM_FAILED");
    assert.match(asked.error!.message, /upstream task 'pool' was rejected/);
    assert.equal(await read(seenFile), "", "reader applied nothing");
  });

  it("once the upstream task applies (new inputs, approved), the downstream task runs with its outputs", async () => {
    await consul.register({ Name: "web", ID: "web-2", Address: "10.0.0.2", Port: 80 });
    await waitFor(async () => (await status("pool")).held?.changes?.add === 1, 120_000, "pool to hold the plan of the new inputs");
    const res = await http(api!.url, "POST", "/v1/tasks/pool/approve", {});
    assert.equal(res.status, 200, res.text);
    await waitFor(async () => (await read(seenFile)) === `${sha256("web-1\nweb-2\n")} 2 no-secret\n`, 120_000, "reader with pool's hash");
    assert.equal(await read(poolFile), "web-1\nweb-2\n");
    const applied = await newest("reader", "applied");
    assert.ok(Date.parse(applied!.start_time) >= Date.parse(runs("pool")[0]!.end_time), "reader ran after pool applied");
    assert.equal(runs("pool")[0]!.outcome, "applied");
    assert.equal((await status("reader")).status, "successful");
  });
});
