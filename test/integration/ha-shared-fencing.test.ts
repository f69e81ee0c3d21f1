import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { assign } from "../../src/ha/rendezvous.ts";
import { startConsul, type ConsulAgent } from "../support/consul.ts";
import { startCountingProxy, type CountingProxy } from "../support/counting-proxy.ts";
import { tempDir, waitFor } from "../support/cts.ts";
import { startCtsProcess, writeHaConfig, type CtsProcess } from "../support/cts-process.ts";

// Shared mode's fencing: a member cut off from Consul stops its runs before anyone else may take
// its tasks, exactly as a cut-off leader does (ha-fencing.test.ts), and the others then apply them.
const TTL_MS = 3_000;
const TASKS = ["s-0", "s-1", "s-2", "s-3"];
const read = (p: string) => readFile(p, "utf8").catch(() => "");
const ps = () => new Promise<string>((r) => execFile("ps", ["-eo", "args"], (_e, out) => r(out)));
const lines = (text: string) => text.split("\n").filter(Boolean);

describe("shared mode fencing: a member cut off from Consul", () => {
  let consul: ConsulAgent;
  let proxy: CountingProxy;
  let tmp: { dir: string; cleanup(): Promise<void> };
  let log: string;
  let cutOff: CtsProcess;
  let healthy: CtsProcess;
  const want = assign(TASKS, ["cts-p", "cts-q"]);
  const ofP = TASKS.filter((t) => want.get(t) === "cts-p");

  before(async () => {
    consul = await startConsul({ extraConfig: 'session_ttl_min = "1s"' });
    proxy = await startCountingProxy(consul.url);
    tmp = await tempDir("cts-shared-fence-");
    log = join(tmp.dir, "applies.log");
    await consul.register({ Name: "web", ID: "web-1", Address: "10.0.0.1", Port: 80 });
    const config = (id: string, address: string, seconds: number) =>
      writeHaConfig(join(tmp.dir, id), {
        consulAddress: address,
        id,
        cluster: "shared-fence",
        sessionTtl: `${TTL_MS / 1000}s`,
        mode: "shared",
        settle: "8s",
        tasks: TASKS.map((t) => `new OwnerLog(${JSON.stringify(t)}, ${JSON.stringify(log)}, ${JSON.stringify(id)}, ${seconds})`),
      });
    // cts-p reaches Consul (and its Terraform the state) only through the proxy; its applies
    // sleep an unusual 17 s so its provisioners are easy to find.
    cutOff = startCtsProcess(await config("cts-p", proxy.address, 17), { name: "cts-p" });
    healthy = startCtsProcess(await config("cts-q", consul.address, 1), { name: "cts-q" });
  });
  after(async () => {
    await Promise.all([cutOff, healthy].map((p) => p?.terminate(15_000)));
    await proxy?.stop().catch(() => undefined);
    await consul?.stop();
    await tmp?.cleanup();
  });

  it("stops its runs before the other member takes its tasks (the fence time itself: ha-session unit test); the other then applies them", async () => {
    assert.ok(ofP.length > 0 && ofP.length < TASKS.length, "both members own tasks");
    // First round: every task applied once by its owner.
    await waitFor(async () => lines(await read(log)).filter((l) => l.endsWith(" end")).length === TASKS.length, 180_000, "the first applies");
    for (const t of TASKS) assert.deepEqual(lines(await read(log)).filter((l) => l.startsWith(`${t} `)), [`${t} ${want.get(t)} start`, `${t} ${want.get(t)} end`]);
    // A change makes every task apply again; cut cts-p off in the middle of its applies.
    await consul.register({ Name: "web", ID: "web-2", Address: "10.0.0.2", Port: 80 });
    await waitFor(async () => (await ps()).includes("sleep 17"), 60_000, "cts-p's provisioners to run");
    const marks = { p: cutOff.mark(), q: healthy.mark() };
    const cutAt = Date.now();
    await proxy.stop();

    const fenced = await cutOff.waitForLine(/ha: lost the session: no session renewal succeeded/, 60_000, marks.p);
    const taken = await Promise.all(ofP.map((t) => healthy.waitForLine(new RegExp(`ha: acquired task '${t}'`), 60_000, marks.q)));
    const first = Math.min(...taken.map((x) => x.at));
    console.log(`# cut off at 0 ms; cts-p fenced itself at ${fenced.at - cutAt} ms; cts-q took its ${ofP.length} tasks from ${first - cutAt} ms (TTL ${TTL_MS} ms)`);
    // Order, not durations: the cut-off member fenced itself before the other took its tasks; when
    // each happened (and the safety margin between them) is printed above.
    assert.ok(first > fenced.at, "the other member took the tasks only after the cut-off one had stopped");
    await waitFor(async () => !(await ps()).includes("sleep 17"), 20_000, "cts-p's provisioners to be stopped");

    // Terraform's state lock of a cancelled apply expires with its own session; cts-q retries.
    await waitFor(
      async () => {
        const now = lines(await read(log));
        return ofP.every((t) => now.includes(`${t} cts-q end`));
      },
      120_000,
      "cts-q to apply cts-p's tasks",
    );
    const text = await read(log);
    for (const t of ofP) {
      const after = lines(text).filter((l) => l.startsWith(`${t} `)).slice(2);
      // cts-p's cancelled apply (a start without an end), then cts-q's: never both at once.
      assert.ok(after.at(-1) === `${t} cts-q end` && after.at(-2) === `${t} cts-q start`, `${t}: ${after.join(" | ")}`);
      assert.equal(after.filter((l) => l.includes("cts-q start")).length, 1, `${t} applied once by cts-q`);
    }
    assert.doesNotMatch(cutOff.logs().slice(marks.p), /ha: acquired task/, "the cut-off member takes nothing without Consul");
  });
});
