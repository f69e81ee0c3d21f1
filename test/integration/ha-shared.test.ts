import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { assign, loadOf, moved } from "../../src/ha/rendezvous.ts";
import { startConsul, type ConsulAgent } from "../support/consul.ts";
import { tempDir, waitFor } from "../support/cts.ts";
import { http, writeEchoModule } from "../support/api.ts";
import { freePort } from "../support/ports.ts";
import { CTS_BIN, startCtsProcess, writeHaConfig, type CtsProcess } from "../support/cts-process.ts";
import { execFile } from "node:child_process";

// Shared mode with real cts processes, real Consul and real OpenTofu. Each task is an OwnerLog:
// every real apply appends "<task> <member> start" and "… end" (one second apart) to one log, so
// the log tells who applied what, how often, and whether two runs of a task ever overlapped.
const TTL_MS = 3_000;
const CLUSTER = "shared-test";
const TASKS = Array.from({ length: 24 }, (_, i) => `t-${String(i).padStart(2, "0")}`);
const read = (p: string) => readFile(p, "utf8").catch(() => "");

interface Apply {
  task: string;
  member: string;
}

/** Completed applies in log order; throws when two runs of one task overlapped. */
function appliesOf(text: string): Apply[] {
  const open = new Map<string, string>();
  const done: Apply[] = [];
  for (const line of text.split("\n").filter(Boolean)) {
    const [task, member, what] = line.split(" ") as [string, string, string];
    if (what === "start") {
      if (open.has(task)) throw new Error(`task ${task} started on ${member} while ${open.get(task)} was applying it`);
      open.set(task, member);
    } else {
      if (open.get(task) !== member) throw new Error(`task ${task}: '${line}' without its start`);
      open.delete(task);
      done.push({ task, member });
    }
  }
  return done;
}

describe("shared mode: three cts processes share 24 tasks (real Consul, real OpenTofu)", () => {
  let consul: ConsulAgent;
  let tmp: { dir: string; cleanup(): Promise<void> };
  let log: string;
  const procs = new Map<string, CtsProcess>();
  const urls = new Map<string, string>();
  /** Owners after the first round, as Consul's locks say. */
  let owners: Map<string, string>;

  const start = async (id: string) => {
    const port = await freePort();
    urls.set(id, `http://127.0.0.1:${port}`);
    await writeEchoModule(join(tmp.dir, id));
    const file = await writeHaConfig(join(tmp.dir, id), {
      consulAddress: consul.address,
      id,
      cluster: CLUSTER,
      sessionTtl: `${TTL_MS / 1000}s`,
      mode: "shared",
      // Processes on a busy 2-core machine start seconds apart: wait for all before the first runs.
      settle: "10s",
      apiPort: port,
      tasks: TASKS.map((t) => `new OwnerLog(${JSON.stringify(t)}, ${JSON.stringify(log)}, ${JSON.stringify(id)})`),
    });
    procs.set(id, startCtsProcess(file, { name: id }));
  };
  const api = (id: string, method: string, path: string, body?: unknown) => http(urls.get(id)!, method, path, body);
  const running = () => [...procs.values()].filter((p) => p.running());
  /** Task → owner from GET /v1/status/cluster on `id`. */
  const ownersSeenBy = async (id: string) => {
    const res = await api(id, "GET", "/v1/status/cluster");
    assert.equal(res.status, 200, res.text);
    const out = new Map<string, string>();
    for (const [member, tasks] of Object.entries(res.body.tasks_by_member as Record<string, string[]>)) for (const t of tasks) out.set(t, member);
    return { owners: out, body: res.body };
  };
  /** Waits until every task is owned as rendezvous hashing over `members` says, and each owner applied it. */
  const converged = async (members: string[], timeoutMs: number, what: string): Promise<Map<string, string>> =>
    waitFor<Map<string, string> | undefined>(
      async () => {
        const { owners: now } = await ownersSeenBy(members[0]!);
        const want = assign(TASKS, members);
        if (TASKS.some((t) => now.get(t) !== want.get(t))) return undefined;
        const applies = appliesOf(await read(log));
        const last = new Map(applies.map((a) => [a.task, a.member]));
        return TASKS.every((t) => last.get(t) === want.get(t)) ? now : undefined;
      },
      timeoutMs,
      what,
    ) as Promise<Map<string, string>>;

  before(async () => {
    consul = await startConsul({ extraConfig: 'session_ttl_min = "1s"' });
    tmp = await tempDir("cts-shared-");
    log = join(tmp.dir, "applies.log");
    await consul.register({ Name: "web", ID: "web-1", Address: "10.0.0.1", Port: 80 });
    for (const id of ["cts-a", "cts-b", "cts-c"]) await start(id);
  });
  after(async () => {
    await Promise.all([...procs.values()].map((p) => p.terminate(20_000)));
    await consul?.stop();
    await tmp?.cleanup();
  });

  it("applies every task exactly once, on the member rendezvous hashing names, within ±50 % of an even share", async () => {
    const members = ["cts-a", "cts-b", "cts-c"];
    owners = await converged(members, 240_000, "24 tasks owned and applied by their owners");
    const applies = appliesOf(await read(log));
    assert.equal(applies.length, TASKS.length, `one apply per task:\n${await read(log)}`);
    assert.deepEqual(applies.map((a) => a.task).sort(), TASKS);
    for (const a of applies) assert.equal(a.member, owners.get(a.task), `${a.task} applied by its owner`);
    const load = loadOf(owners, members);
    console.log(`# tasks per member: ${JSON.stringify(Object.fromEntries(load))}`);
    for (const [m, n] of load) assert.ok(n >= 4 && n <= 12, `${m} owns ${n} of 24 (even: 8)`);
    for (const p of running()) {
      assert.doesNotMatch(p.logs(), /state is locked|TERRAFORM_STATE_LOCKED/i, `${p.name}: no Terraform state lock conflict`);
      // Each member watches only its own tasks' data: it ran and acquired only those.
      const acquired = [...p.logs().matchAll(/ha: acquired task '([^']+)'/g)].map((m) => m[1]!);
      assert.deepEqual(acquired.sort(), TASKS.filter((t) => owners.get(t) === p.name), `${p.name} acquired its share only`);
    }
  });

  it("answers reads for every task on every member, and the cluster status alike on every member", async () => {
    for (const id of urls.keys()) {
      const tasks = (await api(id, "GET", "/v1/status/tasks")).body;
      assert.deepEqual(Object.keys(tasks).sort(), TASKS, `${id} lists every task`);
      const { body } = await ownersSeenBy(id);
      assert.equal(body.mode, "shared");
      assert.deepEqual(body.unowned, []);
      assert.deepEqual(body.members.map((m: any) => m.id), ["cts-a", "cts-b", "cts-c"]);
    }
  });

  it("cts status --cluster lists the tasks by owner", async () => {
    const out = await new Promise<string>((resolve, reject) =>
      execFile(process.execPath, [CTS_BIN, "status", "--cluster", "--http-addr", urls.get("cts-c")!], (err, stdout, stderr) => (err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(stdout))),
    );
    assert.match(out, /Cluster 'shared-test' \(shared mode/);
    for (const id of ["cts-a", "cts-b", "cts-c"]) {
      const mine = TASKS.filter((t) => owners.get(t) === id);
      assert.match(out, new RegExp(`==> ${id}: ${mine.length} ${mine.length === 1 ? "task" : "tasks"}\\n  ${mine.join("\\n  ")}\\n`), out);
    }
  });

  it("redirects a task-changing call to the task's owner", async () => {
    const task = TASKS.find((t) => owners.get(t) !== "cts-a")!;
    const res = await api("cts-a", "PATCH", `/v1/tasks/${task}`, { enabled: true });
    assert.equal(res.status, 400, res.text);
    assert.match(res.body.error.message, new RegExp(`Redirect the request to its owner: id=${owners.get(task)}, address=`));
  });

  it("after kill -9 of a member, the others take its tasks once its session expires and apply each once, never two runs at once", async () => {
    const victim = "cts-b";
    const survivors = ["cts-a", "cts-c"];
    const lost = TASKS.filter((t) => owners.get(t) === victim);
    const before = appliesOf(await read(log)).length;
    const marks = new Map(survivors.map((id) => [id, procs.get(id)!.mark()]));
    const killedAt = Date.now();
    await procs.get(victim)!.kill9();
    const now = await converged(survivors, 120_000, "the survivors to take over and apply");
    const takeovers: number[] = [];
    for (const t of lost) {
      const owner = now.get(t)!;
      const { at } = await procs.get(owner)!.waitForLine(new RegExp(`ha: acquired task '${t}'`), 30_000, marks.get(owner));
      takeovers.push(at - killedAt);
    }
    const slowest = Math.max(...takeovers);
    console.log(`# kill -9 of ${victim} (${lost.length} tasks): taken over after ${Math.min(...takeovers)}..${slowest} ms (bound 2 x TTL = ${2 * TTL_MS} ms)`);
    // Consul expires a session up to 2 x TTL after the last renewal; how soon the survivors' lines
    // arrive after that depends on the machine, so only the waits above bound it (generously).
    const after = appliesOf(await read(log)).slice(before);
    assert.deepEqual(after.map((a) => a.task).sort(), [...lost].sort(), "only the lost tasks were applied again, each once");
    for (const a of after) assert.equal(a.member, now.get(a.task));
    for (const id of survivors) assert.doesNotMatch(procs.get(id)!.logs(), /state is locked|TERRAFORM_STATE_LOCKED/i);
  });

  it("a fourth member joins and takes at most a third of the tasks; only those move", async () => {
    const survivors = ["cts-a", "cts-c"];
    const beforeOwners = assign(TASKS, survivors);
    const before = appliesOf(await read(log)).length;
    await start("cts-d");
    const members = ["cts-a", "cts-c", "cts-d"];
    await converged(members, 180_000, "cts-d to take its share");
    const n = moved(beforeOwners, assign(TASKS, members));
    console.log(`# join of cts-d moved ${n} of ${TASKS.length} tasks`);
    assert.ok(n <= TASKS.length / 3, `moved ${n}`);
    const after = appliesOf(await read(log)).slice(before);
    assert.equal(after.length, n, "each moved task applied once by its new owner, nothing else");
    for (const a of after) assert.equal(a.member, "cts-d");
  });

  it("PATCH {pin} moves a task to the pinned member", async () => {
    const task = TASKS.find((t) => assign(TASKS, ["cts-a", "cts-c", "cts-d"]).get(t) !== "cts-d")!;
    const before = appliesOf(await read(log)).length;
    const res = await api("cts-a", "PATCH", `/v1/tasks/${task}`, { pin: "cts-d" });
    assert.equal(res.status, 200, res.text);
    await waitFor(async () => (await ownersSeenBy("cts-c")).owners.get(task) === "cts-d", 60_000, `${task} to move to cts-d`);
    await waitFor(async () => appliesOf(await read(log)).slice(before).some((a) => a.task === task && a.member === "cts-d"), 60_000, `cts-d to apply ${task}`);
  });

  it("a task created through any member's API is run by its owner, and every member lists it", async () => {
    const members = ["cts-a", "cts-c", "cts-d"];
    const echo = join(tmp.dir, "echo.txt");
    const owner = assign([...TASKS, "api-echo"], members).get("api-echo")!;
    const via = members.find((m) => m !== owner)!;
    const task = { task: { name: "api-echo", module: "./modules/echo", condition: { services: { names: ["web"] } }, variables: { path: echo } } };
    const res = await api(via, "POST", "/v1/tasks", task);
    assert.equal(res.status, 201, res.text);
    await waitFor(async () => (await read(echo)) === "hello web-1\n", 90_000, `${owner} to run the task created on ${via}`);
    await waitFor(async () => (await ownersSeenBy(via)).owners.get("api-echo") === owner, 60_000, "the owner lock");
    for (const id of members) await waitFor(async () => (await api(id, "GET", "/v1/tasks/api-echo")).status === 200, 60_000, `${id} to list api-echo`);
    assert.match(procs.get(owner)!.logs(), /\[api-echo\]/, "the owner ran it");
    for (const id of members.filter((m) => m !== owner)) assert.doesNotMatch(procs.get(id)!.logs(), /\[api-echo\]/, `${id} did not run it`);
    const del = await api(owner, "DELETE", "/v1/tasks/api-echo");
    assert.equal(del.status, 202, del.text);
    for (const id of members) await waitFor(async () => (await api(id, "GET", "/v1/tasks/api-echo")).status === 404, 60_000, `${id} to forget api-echo`);
  });
});
