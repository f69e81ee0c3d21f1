import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn, execFile } from "node:child_process";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { startConsul, type ConsulAgent } from "../support/consul.ts";
import { tempDir, waitFor, writeConfig } from "../support/cts.ts";

const CTS = fileURLToPath(new URL("../../bin/cts.js", import.meta.url));
const LOADED_MODULES = fileURLToPath(new URL("../support/loaded-modules.mjs", import.meta.url));

function cts(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile("node", [CTS, ...args], (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }));
  });
}

describe("cts once and cts inspect exit codes", () => {
  let consul: ConsulAgent;
  let tmp: { dir: string; cleanup(): Promise<void> };
  let good: string;
  let bad: string;

  before(async () => {
    consul = await startConsul();
    tmp = await tempDir();
    await consul.register({ Name: "web", ID: "web-1", Address: "10.0.0.1", Port: 80 });
    await writeFile(join(tmp.dir, "blocker"), "x");
    const goodDir = join(tmp.dir, "good");
    const badDir = join(tmp.dir, "bad");
    await Promise.all([goodDir, badDir].map((d) => import("node:fs/promises").then((fs) => fs.mkdir(d))));
    good = await writeConfig(goodDir, { consulAddress: consul.address, tasks: [`new MemberList("members", ${JSON.stringify(join(tmp.dir, "m.txt"))})`] });
    bad = await writeConfig(badDir, {
      consulAddress: consul.address,
      tasks: [`new MemberList("fine", ${JSON.stringify(join(tmp.dir, "f.txt"))})`, `new FailingTask("failing", ${JSON.stringify(join(tmp.dir, "blocker"))})`],
    });
  });
  after(async () => {
    await consul?.stop();
    await tmp?.cleanup();
  });

  it("inspect exits 2 when changes are present, and prints the plan", async () => {
    const r = await cts(["inspect", "--config", good]);
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stdout, /Task 'members': changes present/);
    assert.match(r.stdout, /local_file\.members/);
  });

  it("once exits 0 when every task applied, and inspect then exits 0", async () => {
    const r = await cts(["once", "--config", good, "--json"]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(JSON.parse(r.stdout).tasks[0].outcome, "applied");
    const i = await cts(["inspect", "--config", good]);
    assert.equal(i.code, 0, i.stderr);
    assert.match(i.stdout, /Task 'members': no changes/);
  });

  it("once exits 1 when a task fails, still applying the others, and names the task", async () => {
    const r = await cts(["once", "--config", bad]);
    assert.equal(r.code, 1);
    assert.match(r.stdout, /fine\s+applied/);
    assert.match(r.stdout, /failing\s+failed/);
    assert.match(r.stderr, /Task 'failing'/);
  });

  it("a bad config exits 2 and names the file and the field", async () => {
    const file = join(tmp.dir, "broken.ts");
    await writeFile(file, `export default { tasks: "nope" };`);
    const r = await cts(["once", "--config", file]);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /broken\.ts: tasks must be an array of tasks/);
  });
});

describe("stopping the daemon", () => {
  // The provisioner sleeps over an hour: a daemon that exits within this test's limit stopped it.
  it("SIGTERM during an apply cancels Terraform and exits cleanly; the main thread never loaded cdktf or a provider binding", { timeout: 180_000 }, async () => {
    const consul = await startConsul();
    const tmp = await tempDir();
    try {
      await consul.register({ Name: "web", ID: "web-1", Address: "10.0.0.1", Port: 80 });
      // An unusual sleep length makes the provisioner's process easy to find.
      const file = await writeConfig(tmp.dir, {
        consulAddress: consul.address,
        tasks: [`new SlowMembers("slow", ${JSON.stringify(join(tmp.dir, "s.txt"))}, 4661)`],
      });
      const loadedOut = join(tmp.dir, "loaded.json");
      const child = spawn("node", ["--import", LOADED_MODULES, CTS, "watch", "--config", file], { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, CTS_TEST_LOADED_OUT: loadedOut } });
      let log = "";
      child.stdout.on("data", (d) => (log += d));
      child.stderr.on("data", (d) => (log += d));
      const exited = new Promise<number | null>((r) => child.on("exit", (code) => r(code)));
      await waitFor(() => /\[slow\].*(Creating|Provisioning)/.test(log), 60_000, "the apply to start");
      child.kill("SIGTERM");
      const code = await exited;
      assert.equal(code, 0, log);
      assert.match(log, /received SIGTERM, stopping/);
      // What the stop SIGKILLed ends a moment after the daemon exited: wait for it, bounded.
      const ps = () => new Promise<string>((r) => execFile("ps", ["-eo", "args"], (_e, out) => r(out)));
      await waitFor(async () => !/sleep 4661/.test(await ps()), 20_000, "no provisioner left behind");
      // The task class was synthesized (its apply ran) in the worker; the main thread has none of it.
      const loaded = JSON.parse(await readFile(loadedOut, "utf8")) as string[];
      assert.ok(loaded.length > 0, "the preload wrote the main thread's modules");
      assert.deepEqual(loaded.filter((f) => /[\\/](cdktf|constructs|@cdktf[\\/]provider-[^\\/]+)[\\/]/.test(f)), []);
    } finally {
      await consul.stop();
      await tmp.cleanup();
    }
  });
});
