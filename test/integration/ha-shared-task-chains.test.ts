import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { ownerOf } from "../../src/ha/rendezvous.ts";
import { startConsul, type ConsulAgent } from "../support/consul.ts";
import { PUBLIC_API, tempDir, waitFor } from "../support/cts.ts";
import { http } from "../support/api.ts";
import { freePort } from "../support/ports.ts";
import { startCtsProcess, type CtsProcess } from "../support/cts-process.ts";
import { tools } from "../support/tools.ts";

const CHAIN_TASKS = fileURLToPath(new URL("../fixtures/chain-tasks.ts", import.meta.url));
const CLUSTER = "shared-chains";
const MEMBERS = ["cts-a", "cts-b", "cts-c"];
/** `pool-reader` runs after `pool`; `alpha` and `beta` are in no chain. The downstream task is listed first. */
const TASKS = ["alpha", "beta", "pool", "pool-reader"];
const read = (p: string) => readFile(p, "utf8").catch(() => "");
const sha256 = (s: string) => createHash("sha256").update(s).digest("hex");
/** What `pool-reader` writes once it read `pool`'s outputs for these instances. */
const seenFor = (ids: string[]) => `${sha256(ids.map((id) => `${id}\n`).join(""))} ${ids.length} no-secret\n`;
/** A run's log line (the daemon's `task '<name>': <outcome>`). */
const ranLine = (task: string) => new RegExp(`task '${task}': (applied|no-op|failed|skipped|held)\\b`);

/** A shared-mode member's config: every member writes into the one folder `out`, from its own working dir. */
async function sharedConfig(dir: string, o: { consulAddress: string; id: string; port: number; out: string }): Promise<string> {
  const t = tools();
  await mkdir(dir, { recursive: true });
  const file = join(dir, "cts.config.ts");
  await writeFile(
    file,
    `import { defineConfig } from ${JSON.stringify(PUBLIC_API)};
import { PoolFile, PoolReader } from ${JSON.stringify(CHAIN_TASKS)};
export default defineConfig({
  id: ${JSON.stringify(o.id)},
  consul: { address: ${JSON.stringify(o.consulAddress)} },
  driver: { terraform: { binary: ${JSON.stringify(t.tofu)}, cliConfigFile: ${JSON.stringify(t.cliConfig)}, workingDir: ${JSON.stringify(join(dir, "sync-tasks"))} } },
  api: { port: ${o.port} },
  // Processes on a busy 2-core machine start seconds apart: wait for all before the first runs.
  highAvailability: { cluster: { name: ${JSON.stringify(CLUSTER)}, mode: "shared", settle: "15s", storage: { sessionTtl: "3s" } } },
  tasks: [
    new PoolReader("pool-reader", ${JSON.stringify(join(o.out, "seen.txt"))}, "pool"),
    new PoolFile("alpha", ${JSON.stringify(join(o.out, "alpha.txt"))}),
    new PoolFile("pool", ${JSON.stringify(join(o.out, "members.txt"))}),
    new PoolFile("beta", ${JSON.stringify(join(o.out, "beta.txt"))}),
  ],
});
`,
  );
  return file;
}

/**
 * CTS #329 in shared mode, with three real `cts watch` processes: a chain's tasks share one owner
 * (rendezvous hashing over the chain's name, its first task in name order: `pool`), which runs
 * the chain upstream first; when that member stops, another one takes the whole chain and runs it
 * with the outputs the first one kept in Consul. The names are such that hashing each task on its
 * own would put `pool-reader` on another member than `pool`, before and after the stop.
 */
describe("task chains in shared mode: one owner per chain (real Consul, real OpenTofu, three cts processes)", () => {
  let consul: ConsulAgent;
  let tmp: { dir: string; cleanup(): Promise<void> };
  let out: string;
  const procs = new Map<string, CtsProcess>();
  const urls = new Map<string, string>();
  /** The chain's owner while all three run. */
  let owner: string;

  const api = (id: string, method: string, path: string, body?: unknown) => http(urls.get(id)!, method, path, body);
  /** Task → owner, from GET /v1/status/cluster on `id` (the holders of the owner locks). */
  const ownersSeenBy = async (id: string) => {
    const res = await api(id, "GET", "/v1/status/cluster");
    assert.equal(res.status, 200, res.text);
    const owners = new Map<string, string>();
    for (const [member, tasks] of Object.entries(res.body.tasks_by_member as Record<string, string[]>)) for (const t of tasks) owners.set(t, member);
    return owners;
  };
  /** Waits until `id` sees every task owned as `want` says. */
  const ownedAs = (id: string, want: Map<string, string>, what: string) =>
    waitFor(async () => {
      const now = await ownersSeenBy(id);
      return TASKS.every((t) => now.get(t) === want.get(t)) ? now : undefined;
    }, 240_000, what);
  /** The task's events as `id` answers them, newest first. */
  const events = async (id: string, task: string): Promise<Array<{ id: string; start_time: string; end_time: string; outcome?: string }>> =>
    (await api(id, "GET", `/v1/status/tasks/${task}?include=events`)).body?.[task]?.events ?? [];
  /** The chain's run lines a member printed after `from`, in order (e.g. ["pool: applied", "pool-reader: applied"]). */
  const chainRuns = (id: string, from = 0) =>
    procs
      .get(id)!
      .linesSince(from)
      .flatMap((l) => {
        const m = /task '(pool|pool-reader)': (applied|no-op|failed|skipped|held)\b/.exec(l);
        return m ? [`${m[1]}: ${m[2]}`] : [];
      });

  before(async () => {
    consul = await startConsul({ extraConfig: 'session_ttl_min = "1s"' });
    tmp = await tempDir("cts-shared-chains-");
    out = join(tmp.dir, "out");
    await mkdir(out);
    await consul.register({ Name: "web", ID: "web-1", Address: "10.0.0.1", Port: 80 });
    for (const id of MEMBERS) {
      const port = await freePort();
      urls.set(id, `http://127.0.0.1:${port}`);
      procs.set(id, startCtsProcess(await sharedConfig(join(tmp.dir, id), { consulAddress: consul.address, id, port, out }), { name: id }));
    }
  });
  after(async () => {
    await Promise.all([...procs.values()].map((p) => p.terminate(20_000)));
    await consul?.stop();
    await tmp?.cleanup();
  });

  it("gives both tasks of the chain the owner hashing names for the chain, and spreads the other tasks", async () => {
    owner = ownerOf("pool", MEMBERS)!;
    assert.notEqual(ownerOf("pool-reader", MEMBERS), owner, "hashed on its own, pool-reader would go elsewhere: a split chain would show");
    const want = new Map(TASKS.map((t) => [t, t === "pool-reader" ? owner : ownerOf(t, MEMBERS)!]));
    assert.ok(new Set(want.values()).size >= 2, "the tasks are spread over more than one member");
    await ownedAs("cts-a", want, "every task owned as hashing says");
    for (const id of MEMBERS) assert.deepEqual(Object.fromEntries(await ownersSeenBy(id)), Object.fromEntries(want), `${id} sees the same owners`);
  });

  it("runs the chain on its owner only, upstream first: the downstream task reads the upstream task's output", async () => {
    await waitFor(async () => (await read(join(out, "seen.txt"))) === seenFor(["web-1"]), 180_000, "pool-reader with pool's first hash");
    assert.equal(await read(join(out, "members.txt")), "web-1\n");
    // The owner's first runs: pool's ended before any of pool-reader's started (none read `{}`).
    const poolFirst = (await waitFor(async () => (await events(owner, "pool")).at(-1), 30_000, "pool's event"))!;
    for (const e of await events(owner, "pool-reader")) assert.ok(Date.parse(e.start_time) >= Date.parse(poolFirst.end_time), `pool-reader's run at ${e.start_time} started after pool's first run ended (${poolFirst.end_time})`);
    assert.equal(chainRuns(owner)[0], "pool: applied", `the owner ran pool first:\n${chainRuns(owner).join("\n")}`);
    for (const id of MEMBERS.filter((m) => m !== owner)) assert.deepEqual(chainRuns(id), [], `${id} ran no task of the chain`);

    // The file is written during pool-reader's apply; its "applied" line follows when the run ends.
    await procs.get(owner)!.waitForLine(ranLine("pool-reader"), 60_000, 0);
    const mark = procs.get(owner)!.mark();
    await consul.register({ Name: "web", ID: "web-2", Address: "10.0.0.2", Port: 80 });
    await waitFor(async () => (await read(join(out, "seen.txt"))) === seenFor(["web-1", "web-2"]), 120_000, "pool-reader with pool's new hash");
    await procs.get(owner)!.waitForLine(ranLine("pool-reader"), 30_000, mark);
    const ran = chainRuns(owner, mark);
    assert.ok(ran.indexOf("pool: applied") >= 0 && ran.indexOf("pool: applied") < ran.indexOf("pool-reader: applied"), `pool applied, then pool-reader:\n${ran.join("\n")}`);
    const [pool] = await events(owner, "pool");
    const [reader] = await events(owner, "pool-reader");
    assert.ok(Date.parse(reader!.start_time) >= Date.parse(pool!.end_time), "pool-reader's run started after pool's ended");
    for (const id of MEMBERS.filter((m) => m !== owner)) assert.deepEqual(chainRuns(id), [], `${id} ran no task of the chain`);
  });

  it("when the owner stops, another member takes the whole chain and runs it upstream first, with the outputs kept in Consul", async () => {
    const survivors = MEMBERS.filter((m) => m !== owner);
    const heir = ownerOf("pool", survivors)!;
    const other = survivors.find((m) => m !== heir)!;
    assert.notEqual(ownerOf("pool-reader", survivors), heir, "hashed on its own, pool-reader would go elsewhere: a split chain would show");
    const want = new Map(TASKS.map((t) => [t, t === "pool-reader" ? heir : ownerOf(t, survivors)!]));
    // The runs so far, as the owner ran them (another member's copy of the events may lag behind).
    const seenBefore = new Set([...(await events(owner, "pool")), ...(await events(owner, "pool-reader"))].map((e) => e.id));
    const marks = new Map(survivors.map((id) => [id, procs.get(id)!.mark()]));

    assert.equal(await procs.get(owner)!.terminate(30_000), 0, "the owner stopped cleanly");
    await ownedAs(heir, want, `${heir} to own the whole chain`);
    for (const t of ["pool", "pool-reader"]) await procs.get(heir)!.waitForLine(new RegExp(`ha: acquired task '${t}'`), 60_000, marks.get(heir));
    // The new owner runs each task once to take it over: pool first, then pool-reader.
    await procs.get(heir)!.waitForLine(ranLine("pool-reader"), 120_000, marks.get(heir));
    const ran = chainRuns(heir, marks.get(heir));
    assert.match(ran[0] ?? "", /^pool: (applied|no-op)$/, `${heir} ran pool first after the takeover:\n${ran.join("\n")}`);
    assert.match(ran.find((r) => r.startsWith("pool-reader")) ?? "", /^pool-reader: (applied|no-op)$/, ran.join("\n"));
    const fresh = async (task: string) => (await events(heir, task)).filter((e) => !seenBefore.has(e.id));
    const poolTakeover = (await waitFor(async () => (await fresh("pool")).at(-1), 30_000, "pool's takeover event"))!;
    for (const e of await fresh("pool-reader")) assert.ok(Date.parse(e.start_time) >= Date.parse(poolTakeover.end_time), `pool-reader's run at ${e.start_time} started after pool's takeover run ended (${poolTakeover.end_time})`);
    // Without pool's kept outputs pool-reader would have written "none none no-secret".
    assert.equal(await read(join(out, "seen.txt")), seenFor(["web-1", "web-2"]), "pool-reader read pool's kept outputs on the new owner");
    assert.deepEqual(chainRuns(other, marks.get(other)), [], `${other} ran no task of the chain`);

    const mark = procs.get(heir)!.mark();
    await consul.register({ Name: "web", ID: "web-3", Address: "10.0.0.3", Port: 80 });
    await waitFor(async () => (await read(join(out, "seen.txt"))) === seenFor(["web-1", "web-2", "web-3"]), 120_000, `pool-reader with pool's new hash, on ${heir}`);
    assert.equal(await read(join(out, "members.txt")), "web-1\nweb-2\nweb-3\n");
    await procs.get(heir)!.waitForLine(ranLine("pool-reader"), 30_000, mark);
    const after = chainRuns(heir, mark);
    assert.ok(after.indexOf("pool: applied") >= 0 && after.indexOf("pool: applied") < after.indexOf("pool-reader: applied"), `pool applied, then pool-reader, on ${heir}:\n${after.join("\n")}`);
    assert.deepEqual(chainRuns(other, marks.get(other)), [], `${other} ran no task of the chain`);
  });

  it("after kill -9 of the chain's new owner, the last member takes the whole chain once its session expires, upstream first, with the outputs kept in Consul", async () => {
    const survivors = MEMBERS.filter((m) => m !== owner);
    const heir = ownerOf("pool", survivors)!;
    const last = survivors.find((m) => m !== heir)!;
    // The heir is idle: its chain ran to the end (the previous test waited for pool-reader's line).
    const seenBefore = new Set([...(await events(heir, "pool")), ...(await events(heir, "pool-reader"))].map((e) => e.id));
    const mark = procs.get(last)!.mark();
    await procs.get(heir)!.kill9();
    await ownedAs(last, new Map(TASKS.map((t) => [t, last])), `${last} to own every task after the crash`);
    for (const t of ["pool", "pool-reader"]) await procs.get(last)!.waitForLine(new RegExp(`ha: acquired task '${t}'`), 60_000, mark);
    await procs.get(last)!.waitForLine(ranLine("pool-reader"), 120_000, mark);
    const ran = chainRuns(last, mark);
    assert.match(ran[0] ?? "", /^pool: (applied|no-op)$/, `${last} ran pool first after the crash:\n${ran.join("\n")}`);
    assert.match(ran.find((r) => r.startsWith("pool-reader")) ?? "", /^pool-reader: (applied|no-op)$/, ran.join("\n"));
    const fresh = async (task: string) => (await events(last, task)).filter((e) => !seenBefore.has(e.id));
    const poolTakeover = (await waitFor(async () => (await fresh("pool")).at(-1), 30_000, "pool's takeover event"))!;
    for (const e of await fresh("pool-reader")) assert.ok(Date.parse(e.start_time) >= Date.parse(poolTakeover.end_time), `pool-reader's run at ${e.start_time} started after pool's takeover run ended (${poolTakeover.end_time})`);
    // The crashed member's kept outputs: without them pool-reader would have written "none none no-secret".
    assert.equal(await read(join(out, "seen.txt")), seenFor(["web-1", "web-2", "web-3"]), "pool-reader read pool's kept outputs after the crash");
    assert.doesNotMatch(procs.get(last)!.logs(), /state is locked|TERRAFORM_STATE_LOCKED/i);

    const next = procs.get(last)!.mark();
    await consul.register({ Name: "web", ID: "web-4", Address: "10.0.0.4", Port: 80 });
    await waitFor(async () => (await read(join(out, "seen.txt"))) === seenFor(["web-1", "web-2", "web-3", "web-4"]), 120_000, `pool-reader with pool's new hash, on ${last}`);
    await procs.get(last)!.waitForLine(ranLine("pool-reader"), 30_000, next);
    const after = chainRuns(last, next);
    assert.ok(after.indexOf("pool: applied") >= 0 && after.indexOf("pool: applied") < after.indexOf("pool-reader: applied"), `pool applied, then pool-reader, on ${last}:\n${after.join("\n")}`);
  });
});
