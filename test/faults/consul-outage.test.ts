import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { startConsul, type ConsulAgent } from "../support/consul.ts";
import { tempDir, waitFor, writeConfig } from "../support/cts.ts";
import { CTS_BIN, startCtsProcess, writeHaConfig, type CtsProcess } from "../support/cts-process.ts";
import { processesIn } from "./support.ts";
import { execFile } from "node:child_process";
import { promisify } from "node:util";

const run = promisify(execFile);

const read = (p: string) => readFile(p, "utf8").catch(() => "");
const getJson = async (url: string) => (await fetch(url)).json() as Promise<any>;

/**
 * A real `cts watch` with two tasks while its Consul agent is stopped, the data changes while it
 * is gone (the dev agent comes back with an empty catalog and new instances), and it returns.
 * Order, not durations: the lost line, the stale status, the back line, the re-sync of every task.
 */
describe("Consul stopped while tasks run, changed while down, restarted (real cts watch, OpenTofu, Consul)", () => {
  let consul: ConsulAgent;
  let tmp: { dir: string; cleanup(): Promise<void> };
  let cts: CtsProcess;
  let web: string;
  let api: string;
  let url = "";

  before(async () => {
    consul = await startConsul();
    tmp = await tempDir("cts-outage-");
    web = join(tmp.dir, "web.txt");
    api = join(tmp.dir, "api.txt");
    await consul.register({ Name: "web", ID: "web-1", Address: "10.0.0.1", Port: 80 });
    await consul.register({ Name: "api", ID: "api-1", Address: "10.0.1.1", Port: 80 });
    const config = await writeConfig(tmp.dir, {
      consulAddress: consul.address,
      extra: `id: "outage-cts",`,
      tasks: [`new MemberList("web", ${JSON.stringify(web)})`, `new MemberList("api", ${JSON.stringify(api)}, "api")`],
    });
    cts = startCtsProcess(config, { name: "cts" });
    url = (await cts.waitForLine(/api: listening on (\S+)/, 120_000)).line.match(/listening on (\S+)/)![1]!;
    await waitFor(async () => (await read(web)).includes("web-1") && (await read(api)).includes("api-1"), 120_000, "the first applies");
    // The file is written before the run's event is recorded: wait for both statuses too.
    await waitFor(async () => {
      const tasks = await getJson(`${url}/v1/status/tasks`);
      return tasks.web?.status === "successful" && tasks.api?.status === "successful";
    }, 60_000, "both tasks successful");
  });
  after(async () => {
    await cts?.terminate(15_000);
    await consul?.stop();
    await tmp?.cleanup();
  });

  it("says Consul is gone (status, task statuses as stale, metric, one warn line), re-syncs every changed task once it is back, and registers itself again", async () => {
    assert.equal((await getJson(`${url}/v1/status`)).consul.reachable, true);
    const mark = cts.mark();
    await consul.halt();
    await cts.waitForLine(/lost contact with Consul/, 60_000, mark);
    const status = await getJson(`${url}/v1/status`);
    assert.equal(status.consul.reachable, false);
    assert.match(status.consul.reason, /Cannot reach Consul/);
    assert.equal(status.task_summary.status.successful, 0, "no task says successful while Consul is gone");
    const tasks = await getJson(`${url}/v1/status/tasks`);
    for (const name of ["web", "api"]) {
      assert.equal(tasks[name].status, "unknown");
      assert.equal(tasks[name].stale.last_status, "successful");
    }
    assert.match(await (await fetch(`${url}/metrics`)).text(), /^cts_consul_reachable 0$/m);
    assert.match(await (await fetch(`${url}/metrics`)).text(), /^cts_task_status\{task="web",status="unknown"\} 1$/m);
    const { stdout } = await run(process.execPath, [CTS_BIN, "status", "--http-addr", url]);
    assert.match(stdout, /Consul: UNREACHABLE since/);
    assert.match(stdout, /unknown \(stale: successful\)/);

    // Back, with other data: a dev agent restarts with an empty catalog (and without cts's registration).
    await consul.resume();
    await consul.register({ Name: "web", ID: "web-2", Address: "10.0.0.2", Port: 80 });
    await consul.register({ Name: "api", ID: "api-2", Address: "10.0.1.2", Port: 80 });
    await waitFor(async () => (await read(web)).includes("web-2") && (await read(api)).includes("api-2"), 120_000, "both tasks re-synced");
    await waitFor(async () => Object.keys(await consul.api("GET", "/v1/agent/services")).includes("outage-cts"), 60_000, "the registration restored");
    assert.match(await (await fetch(`${url}/metrics`)).text(), /^cts_consul_reachable 1$/m);
    // tofu writes the file before it exits: the "applied" lines and the statuses come after it.
    await cts.waitForLine(/task 'web': applied/, 60_000, mark);
    await cts.waitForLine(/task 'api': applied/, 60_000, mark);
    await waitFor(async () => {
      const tasks = await getJson(`${url}/v1/status/tasks`);
      return tasks.web?.status === "successful" && tasks.api?.status === "successful";
    }, 60_000, "both tasks successful again");

    const lines = cts.linesSince(mark);
    const at = (re: RegExp) => lines.findIndex((l) => re.test(l));
    assert.equal(lines.filter((l) => /lost contact with Consul/.test(l)).length, 1, "one warn line when Consul is lost");
    assert.deepEqual(lines.filter((l) => /\[WARN\].*Cannot reach Consul/.test(l) && !/lost contact/.test(l)), [], "no warn line per task or per read while Consul is gone");
    assert.ok(at(/lost contact with Consul/) < at(/answers again/), "lost, then back");
    assert.ok(at(/answers again/) < at(/task 'web': applied/) && at(/answers again/) < at(/task 'api': applied/), "the re-syncs come after the back line");
    assert.equal(lines.filter((l) => /answers again/.test(l)).length, 1, "one info line when Consul is back");
  });

  // No wall-clock bound: the daemon says which steps it skipped and that every Consul call after
  // the stop began was refused at once (the client makes none and fails those in flight); the time
  // it took is reported as a diagnostic only.
  it("SIGTERM while Consul is unreachable ends the daemon without waiting on Consul", async (t) => {
    const mark = cts.mark();
    await consul.halt();
    try {
      await cts.waitForLine(/lost contact with Consul/, 60_000, mark);
      const code = await cts.terminate(60_000);
      assert.equal(code, 0);
      const lines = cts.linesSince(mark);
      const at = (re: RegExp) => lines.findIndex((l) => re.test(l));
      assert.ok(at(/not deregistering service id 'outage-cts': Consul is unreachable/) >= 0, "no deregistration call to a Consul that is gone");
      assert.ok(at(/stopping while Consul is unreachable \(since .+\): no call to Consul is made or waited for/) > at(/received SIGTERM/), "the stop says at once that it will not call Consul");
      const summary = lines[at(/stopped in \d+ ms without Consul/)];
      assert.ok(summary, lines.join("\n"));
      assert.match(summary, /skipped deregistering service id 'outage-cts'; \d+ Consul call\(s\) refused at once, none waited for/);
      t.diagnostic(`SIGTERM → exit with Consul unreachable: ${summary.match(/stopped in (\d+ ms)/)![1]} (the daemon's own measure)`);
    } finally {
      await consul.resume();
    }
  });

  it("SIGTERM of a high-availability leader with a run in flight while Consul is unreachable: the run is cancelled, the lock release, the session and the member record are skipped", async (t) => {
    const dir = join(tmp.dir, "ha");
    const config = await writeHaConfig(dir, {
      consulAddress: consul.address,
      id: "outage-ha",
      cluster: "outage",
      sessionTtl: "15s",
      // A run in flight when the signal comes: its apply sleeps in a provisioner.
      tasks: [`new SlowMembers("ha-slow", ${JSON.stringify(join(dir, "slow.txt"))}, 600)`],
    });
    const ha = startCtsProcess(config, { name: "cts-ha" });
    try {
      await ha.waitForLine(/ha: acquired leadership lock: id=outage-ha/, 120_000);
      await waitFor(async () => (await processesIn(dir)).some((p) => /sleep 600/.test(p)), 120_000, "the slow apply in flight");
      const mark = ha.mark();
      await consul.halt();
      await ha.waitForLine(/lost contact with Consul/, 60_000, mark);
      const code = await ha.terminate(60_000);
      assert.equal(code, 0);
      const lines = ha.linesSince(mark);
      const summary = lines.find((l) => /stopped in \d+ ms without Consul/.test(l));
      assert.ok(summary, lines.join("\n"));
      for (const step of [/releasing the leader lock/, /destroying the HA session/, /removing the member record/, /deregistering service id 'outage-ha'/])
        assert.match(summary, step, "the step is named as skipped");
      assert.match(summary, /Consul call\(s\) refused at once, none waited for; 1 run\(s\) in flight cancelled/);
      // What the cancelled run started ends with the daemon (its exit signal, then the reaper).
      await waitFor(async () => (await processesIn(dir)).length === 0, 60_000, "no process of the cancelled run left");
      assert.ok(lines.some((l) => /ha: stopped leading; the leader lock goes with the session's TTL/.test(l)));
      t.diagnostic(`SIGTERM → exit of an HA leader with Consul unreachable: ${summary.match(/stopped in (\d+ ms)/)![1]}`);
    } finally {
      await ha.terminate(15_000);
      await consul.resume();
    }
  });
});
