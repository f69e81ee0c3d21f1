import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { startConsul, type ConsulAgent } from "../support/consul.ts";
import { PUBLIC_API, startRuntime, tempDir, waitFor, type TestRuntime } from "../support/cts.ts";
import { tools } from "../support/tools.ts";

const CHAIN_TASKS = fileURLToPath(new URL("../fixtures/chain-tasks.ts", import.meta.url));
const read = (p: string) => readFile(p, "utf8").catch(() => "");
const exists = (p: string) => stat(p).then(() => true, () => false);

/**
 * CTS #329 asks for a chain to run "on the same catalog snapshot". `pool` (watching 'web') and
 * `dblog` (watching 'db', after pool) form a chain; pool's apply waits at a gate the test opens. A
 * change of 'db' while pool applies must not reach dblog's run that follows pool (that run pairs
 * pool's outputs with the data pool's run read), only the run after it.
 */
describe("a task chain runs on one snapshot (real Consul, real OpenTofu)", () => {
  let consul: ConsulAgent;
  let tmp: { dir: string; cleanup(): Promise<void> };
  let rt: TestRuntime | undefined;
  let gate: string;
  let log: string;

  before(async () => {
    consul = await startConsul();
    tmp = await tempDir("cts-chain-snapshot-");
    gate = join(tmp.dir, "gate");
    log = join(tmp.dir, "dblog.txt");
    await mkdir(gate);
    await writeFile(join(gate, "open"), "");
    await consul.register({ Name: "web", ID: "web-1", Address: "10.0.0.1", Port: 80 });
    await consul.register({ Name: "db", ID: "db-1", Address: "10.0.1.1", Port: 5432 });
    const t = tools();
    const file = join(tmp.dir, "cts.config.ts");
    await writeFile(
      file,
      `import { defineConfig } from ${JSON.stringify(PUBLIC_API)};
import { DbLog, GatedPool } from ${JSON.stringify(CHAIN_TASKS)};
export default defineConfig({
  consul: { address: ${JSON.stringify(consul.address)} },
  driver: { terraform: { binary: ${JSON.stringify(t.tofu)}, cliConfigFile: ${JSON.stringify(t.cliConfig)}, workingDir: ${JSON.stringify(join(tmp.dir, "sync-tasks"))} } },
  tasks: [new GatedPool("pool", ${JSON.stringify(join(tmp.dir, "pool.txt"))}, ${JSON.stringify(gate)}), new DbLog("dblog", ${JSON.stringify(log)}, "pool")],
});
`,
    );
    rt = await startRuntime(file);
    await waitFor(async () => (await read(log)) === "1-1\n", 120_000, "the chain's first run");
  });
  after(async () => {
    await writeFile(join(gate, "open"), "").catch(() => {});
    await rt?.close();
    await consul?.stop();
    await tmp?.cleanup();
  });

  it("gives the downstream run the data the upstream run read, then runs it again on the newer data", async () => {
    const waits = () => rt!.lines.filter((l) => l.includes("task 'dblog': waits for upstream task 'pool'")).length;
    await rm(join(gate, "open"));
    await rm(join(gate, "started"), { force: true });
    await consul.register({ Name: "web", ID: "web-2", Address: "10.0.0.2", Port: 80 });
    // pool read 'web' (2) and 'db' for dblog (1), and is applying: its local-exec waits at the gate.
    await waitFor(() => exists(join(gate, "started")), 120_000, "pool's apply at the gate");
    const waited = waits();
    await consul.register({ Name: "db", ID: "db-2", Address: "10.0.1.2", Port: 5432 });
    // The daemon saw the change: dblog's own run is asked for, and waits for pool's.
    await waitFor(() => waits() > waited, 60_000, "dblog's run waiting for pool's");
    await writeFile(join(gate, "open"), "");
    await waitFor(async () => (await read(log)).endsWith("2-2\n"), 120_000, "dblog on the newer data");
    assert.equal(await read(log), "1-1\n2-1\n2-2\n", "dblog ran on pool's snapshot (2 web, 1 db), then on the newer data");
    // The log line is written during the apply; the run's history record follows when it ends.
    const runs = (await waitFor(() => {
      const r = rt!.controller.taskRuns?.("dblog") ?? [];
      return r[0]?.trigger === "change" ? r : undefined;
    }, 30_000, "dblog's last run in its history"))!;
    assert.deepEqual(runs.slice(0, 2).map((r) => [r.trigger, r.outcome]).reverse(), [["upstream", "applied"], ["change", "applied"]]);
  });
});
