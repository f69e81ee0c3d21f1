import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdir, readdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { startConsul, type ConsulAgent } from "../support/consul.ts";
import { FIXTURE_TASKS, PUBLIC_API, tempDir, waitFor } from "../support/cts.ts";
import { startCtsProcess, type CtsProcess } from "../support/cts-process.ts";
import { tools } from "../support/tools.ts";
import { processesIn } from "./support.ts";

const read = (p: string) => readFile(p, "utf8").catch(() => "");
const exists = (p: string) => readFile(p).then(() => true, () => false);

/** Every process below `pid` (children, theirs, …), from /proc. */
async function descendants(pid: number): Promise<number[]> {
  const children = new Map<number, number[]>();
  for (const p of await readdir("/proc")) {
    if (!/^\d+$/.test(p)) continue;
    const stat = await readFile(`/proc/${p}/stat`, "utf8").catch(() => "");
    if (!stat) continue;
    const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
    children.set(ppid, [...(children.get(ppid) ?? []), Number(p)]);
  }
  const found: number[] = [];
  const walk = (p: number) => {
    for (const c of children.get(p) ?? []) {
      found.push(c);
      walk(c);
    }
  };
  walk(pid);
  return found;
}

function signalAll(pids: number[], sig: NodeJS.Signals): void {
  for (const p of pids) {
    try {
      process.kill(p, sig);
    } catch {
      /* exited meanwhile */
    }
  }
}

/** The `start`/`end` marks of the slow step, by the shell that ran it. */
async function marksOf(file: string): Promise<Map<string, string[]>> {
  const byShell = new Map<string, string[]>();
  for (const line of (await read(file)).split("\n").filter(Boolean)) {
    const [what, shell] = line.split(" ");
    byShell.set(shell!, [...(byShell.get(shell!) ?? []), what!]);
  }
  return byShell;
}

/**
 * A whole-leader stall (issue #36 item 1): the high-availability leader's process tree (the daemon,
 * its OpenTofu, the provisioner's shell) is stopped with SIGSTOP in the middle of an apply, for
 * longer than its session and Terraform's state lock live (a VM or host pause). The follower takes
 * over and applies; the old leader is resumed while the new leader's apply runs. Real cts
 * processes, a real Consul agent and OpenTofu with the consul backend.
 */
describe("an HA leader stalled (SIGSTOP of its process tree) past its session mid-apply (real cts, OpenTofu, Consul)", () => {
  let consul: ConsulAgent;
  let tmp: { dir: string; cleanup(): Promise<void> };
  let a: CtsProcess;
  let b: CtsProcess;
  let members: string;
  let marks: string;
  let frozen: number[] = [];

  const config = async (id: string, seconds: number) => {
    const t = tools();
    const dir = join(tmp.dir, id);
    await mkdir(dir, { recursive: true });
    const file = join(dir, "cts.config.ts");
    await writeFile(
      file,
      `import { defineConfig } from ${JSON.stringify(PUBLIC_API)};
import { StallableMembers } from ${JSON.stringify(FIXTURE_TASKS)};
export default defineConfig({
  id: ${JSON.stringify(id)},
  consul: { address: ${JSON.stringify(consul.address)} },
  driver: { terraform: { binary: ${JSON.stringify(t.tofu)}, cliConfigFile: ${JSON.stringify(t.cliConfig)}, workingDir: ${JSON.stringify(join(dir, "sync-tasks"))}, log: true } },
  api: { port: 0 },
  highAvailability: { cluster: { name: "stall", storage: { sessionTtl: "10s" } } },
  tasks: [new StallableMembers("stall", ${JSON.stringify(members)}, ${JSON.stringify(marks)}, ${seconds})],
});
`,
    );
    return file;
  };

  before(async () => {
    consul = await startConsul();
    tmp = await tempDir("cts-ha-stall-");
    members = join(tmp.dir, "members.txt");
    marks = join(tmp.dir, "marks.txt");
    await consul.register({ Name: "web", ID: "web-1", Address: "10.0.0.1", Port: 80 });
    // The first leader's slow step would take 10 min: only a stall and a kill end it. The second's takes 15 s.
    a = startCtsProcess(await config("cts-a", 600), { name: "cts-a" });
    await a.waitForLine(/ha: acquired leadership lock: id=cts-a/, 120_000);
    await waitFor(async () => (await read(members)) === "web-1 10.0.0.1:80\n", 120_000, "the first apply");
    b = startCtsProcess(await config("cts-b", 15), { name: "cts-b" });
    await waitFor(async () => ((await consul.api("GET", "/v1/session/list")) as Array<{ Name: string }>).some((s) => s.Name === "cts-ha:stall:cts-b"), 120_000, "the follower's session");
  });
  after(async () => {
    signalAll(frozen, "SIGCONT");
    await a?.terminate(15_000);
    await b?.terminate(15_000);
    await consul?.stop();
    await tmp?.cleanup();
  });

  it("kills the old leader's Terraform as it resumes: no state written after its lock was lost, the new leader's apply saved whole", async (t) => {
    await consul.register({ Name: "web", ID: "web-2", Address: "10.0.0.2", Port: 80 });
    // The leader's apply is in its slow step (the file was deleted first: a replace).
    await waitFor(async () => (await marksOf(marks)).size === 1, 120_000, "the leader's apply to reach its slow step");
    const [oldShell] = [...(await marksOf(marks)).keys()];
    assert.ok((await processesIn(join(tmp.dir, "cts-a"))).some((p) => /tofu apply/.test(p)), "the leader's tofu apply runs");

    // The whole tree stops at once, as in a VM pause: daemon, reaper, tofu, provider, shell, sleep.
    const aMark = a.mark();
    frozen = [a.pid!, ...(await descendants(a.pid!))];
    signalAll(frozen, "SIGSTOP");
    const stoppedAt = Date.now();

    // The follower takes over once the session expired, waits for the stopped tofu's state lock to
    // expire (the consul backend: 15 s TTL × 2 + lock delay), then applies: its slow step starts.
    const bMark = b.mark();
    const leads = await b.waitForLine(/ha: acquired leadership lock: id=cts-b/, 120_000);
    await waitFor(async () => (await marksOf(marks)).size === 2, 180_000, "the new leader's apply to reach its slow step");
    const appliesAt = Date.now();

    // Resumed in the middle of the new leader's apply, the daemon first, the rest in the same instant.
    signalAll(frozen, "SIGCONT");
    frozen = [];
    const resumedAt = Date.now();
    const fenced = await a.waitForLine(/killed at once/, 60_000, aMark);
    t.diagnostic(`SIGSTOP → new leader ${leads.at - stoppedAt} ms; → its apply's slow step ${appliesAt - stoppedAt} ms; SIGCONT → old leader's kill line ${fenced.at - resumedAt} ms`);
    assert.match(fenced.line, /ha: (this instance was stalled for|lost leadership: the leader lock is no longer held)/);
    await waitFor(async () => !(await processesIn(join(tmp.dir, "cts-a"))).some((p) => /tofu apply/.test(p)), 60_000, "the old leader's tofu to be gone");

    // The new leader's apply finishes and its state save succeeds: nothing overlapped it.
    await waitFor(async () => (await read(members)) === "web-1 10.0.0.1:80\nweb-2 10.0.0.2:80\n", 180_000, "the new leader's apply");
    await b.waitForLine(/task 'stall': applied/, 60_000, bMark);
    const bLogs = b.logs().slice(bMark);
    assert.doesNotMatch(bLogs, /Failed to save state|Failed to persist state|CAS failed|errored\.tfstate/, "the new leader's state save did not fail");
    assert.equal(await exists(join(tmp.dir, "cts-b", "sync-tasks", "stall", "errored.tfstate")), false);
    assert.equal(await exists(join(tmp.dir, "cts-a", "sync-tasks", "stall", "errored.tfstate")), false);
    assert.doesNotMatch(a.logs().slice(aMark), /\[stall\].*(Apply complete|Interrupt received|Gracefully shutting down)/, "the old tofu did no graceful stop (which saves state)");

    // The old leader's slow step never finished; the new leader's did.
    const byShell = await marksOf(marks);
    assert.deepEqual(byShell.get(oldShell!), ["start"], "the old leader's provisioner was killed");
    const newShell = [...byShell.keys()].find((s) => s !== oldShell)!;
    assert.deepEqual(byShell.get(newShell), ["start", "end"]);

    // The stalled instance is a follower now: it runs nothing more.
    assert.ok(a.running(), "the resumed daemon keeps running");
    await a.waitForLine(/this instance is now a follower/, 30_000, aMark);
  });
});
