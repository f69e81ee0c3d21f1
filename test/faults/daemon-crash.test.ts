import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { startConsul, type ConsulAgent } from "../support/consul.ts";
import { tempDir, waitFor, writeConfig } from "../support/cts.ts";
import { startCtsProcess, type CtsProcess } from "../support/cts-process.ts";
import { processesIn } from "./support.ts";

const read = (p: string) => readFile(p, "utf8").catch(() => "<missing>");

/** The pid of the reaper `sh` a cts process started (its child whose argv names cts-reaper). */
async function reaperOf(pid: number): Promise<number | undefined> {
  for (const p of await readdir("/proc")) {
    if (!/^\d+$/.test(p)) continue;
    try {
      const stat = await readFile(`/proc/${p}/stat`, "utf8");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      const cmd = await readFile(`/proc/${p}/cmdline`, "utf8");
      if (ppid === pid && cmd.includes("cts-reaper")) return Number(p);
    } catch {
      /* gone */
    }
  }
  return undefined;
}

/**
 * `kill -9` of a real `cts watch` while its Terraform is in the middle of an apply that has just
 * deleted the managed file (a replace whose new file waits for a 20 s provisioner).
 */
describe("a daemon killed with SIGKILL during an apply (real cts watch, OpenTofu, Consul)", () => {
  let consul: ConsulAgent;
  let tmp: { dir: string; cleanup(): Promise<void> };
  let cts: CtsProcess;
  let members: string;
  let work: string;

  before(async () => {
    consul = await startConsul();
    tmp = await tempDir("cts-crash-");
    members = join(tmp.dir, "members.txt");
    work = join(tmp.dir, "sync-tasks");
    await consul.register({ Name: "web", ID: "web-1", Address: "10.0.0.1", Port: 80 });
    const config = await writeConfig(tmp.dir, { consulAddress: consul.address, tasks: [`new SlowThenMembers("slow", ${JSON.stringify(members)}, 20)`] });
    cts = startCtsProcess(config, { name: "cts" });
    await waitFor(async () => (await read(members)) === "web-1 10.0.0.1:80\n", 120_000, "the first apply");
  });
  after(async () => {
    await cts?.terminate(15_000);
    await consul?.stop();
    await tmp?.cleanup();
  });

  /** Registers one more instance and waits until the apply it triggers is in its provisioner, the file deleted. */
  async function midApply(id: string, address: string): Promise<void> {
    const mark = cts.mark();
    await consul.register({ Name: "web", ID: id, Address: address, Port: 80 });
    await cts.waitForLine(/\[slow\].*terraform_data\.slow: Provisioning/, 120_000, mark);
    await waitFor(async () => (await processesIn(work)).some((p) => / sleep 20$/.test(p)) && (await read(members)) === "<missing>", 60_000, "the provisioner to run with the file deleted");
  }

  it("leaves no Terraform, provider or provisioner process behind, and the restarted daemon repairs the file", async () => {
    await midApply("web-2", "10.0.0.2");
    const running = await processesIn(work);
    assert.ok(running.some((p) => /tofu apply/.test(p)), running.join("\n"));
    await cts.kill9();

    // The reaper interrupts Terraform at once; SIGKILL follows after the kill grace period (10 s).
    const left = await waitFor(async () => (await processesIn(work)).length === 0, 30_000, "the crashed daemon's processes to go").catch(async (e: Error) => {
      throw new Error(`${e.message}\n${(await processesIn(work)).join("\n")}`);
    });
    assert.ok(left);

    const mark = cts.mark();
    await cts.restart();
    await waitFor(async () => (await read(members)) === "web-1 10.0.0.1:80\nweb-2 10.0.0.2:80\n", 120_000, "the restarted daemon to write the file");
    assert.doesNotMatch(cts.logs().slice(mark), /TERRAFORM_STATE_LOCKED|giving up/);
  });

  it("cleans up after a crash that took the reaper too, on the next start", async () => {
    await midApply("web-3", "10.0.0.3");
    const daemon = cts.pid!;
    const reaper = await reaperOf(daemon);
    assert.ok(reaper, "the daemon runs a reaper");
    process.kill(reaper, "SIGKILL");
    await cts.kill9();
    const orphans = await processesIn(work);
    assert.ok(orphans.some((p) => /tofu apply/.test(p)), `without the reaper Terraform is orphaned:\n${orphans.join("\n")}`);
    // Freeze the orphans so that none finishes on its own while the daemon restarts (on a busy
    // machine a restart can outlast the 20 s provisioner): the restarted daemon must end them.
    for (const p of orphans) {
      try {
        process.kill(Number(p.split(" ")[0]), "SIGSTOP");
      } catch {
        /* exited meanwhile */
      }
    }

    const mark = cts.mark();
    await cts.restart();
    await cts.waitForLine(/a previous run left `tofu apply` of task 'slow' running/, 60_000, mark);
    await waitFor(async () => (await read(members)) === "web-1 10.0.0.1:80\nweb-2 10.0.0.2:80\nweb-3 10.0.0.3:80\n", 180_000, "the restarted daemon to write the file");
    // Only the daemon's own, finished, commands are left: nothing still runs in the working dir.
    // (The restarted daemon's own warm provider servers stay, by design, until it stops.)
    await waitFor(async () => (await processesIn(work, { exceptWarmOf: cts.pid! })).length === 0, 30_000, "no Terraform left running");
  });
});
