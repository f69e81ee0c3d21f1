import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { startDaemonApi } from "../../src/daemon/api.ts";
import { startConsul, type ConsulAgent } from "../support/consul.ts";
import { startRuntime, tempDir, waitFor, writeConfig, type TestRuntime } from "../support/cts.ts";
import { http, writeEchoModule } from "../support/api.ts";
import { constructId } from "../../src/index.ts";

/** The files GuardedPool writes for these instance ids. */
const named = (...ids: string[]) => ids.map((id) => `${constructId(id)}.txt`).sort();

const CTS = fileURLToPath(new URL("../../bin/cts.js", import.meta.url));

/**
 * Plan guards and approvals against a real Consul agent and real OpenTofu: a change that would
 * destroy too much is held (status, event, metric, log), approving applies exactly the held plan,
 * rejecting discards it, newer inputs supersede it, `approval: "always"` holds every plan, a
 * predicate holds with its reason, and a hold survives a restart of the daemon.
 */
describe("plan guards and approvals (real Consul, real OpenTofu)", () => {
  let consul: ConsulAgent;
  let tmp: { dir: string; cleanup(): Promise<void> };
  let config: string;
  let rt: TestRuntime;
  let api: { url: string; stop: () => Promise<void> };
  const dir = (task: string) => join(tmp.dir, task);
  const files = async (task: string) => (await readdir(dir(task)).catch(() => [] as string[])).sort();
  const status = async (task: string) => (await http(api.url, "GET", `/v1/status/tasks/${task}?include=events`)).body[task];
  const cts = (args: string[]): Promise<{ code: number; stdout: string; stderr: string }> =>
    new Promise((resolve) => {
      execFile("node", [CTS, ...args, "--http-addr", api.url], (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }));
    });
  /** Registers instances `<service>-1…n`. */
  const register = async (service: string, ids: number[]) => {
    for (const i of ids) await consul.register({ Name: service, ID: `${service}-${i}`, Address: `10.0.0.${i}`, Port: 80 });
  };
  const deregister = async (service: string, ids: number[]) => {
    for (const i of ids) await consul.deregister(`${service}-${i}`);
  };
  const heldNow = (task: string, destroy?: number) =>
    waitFor(async () => {
      const held = (await status(task))?.held;
      return held && (destroy === undefined || held.changes.destroy === destroy) ? held : undefined;
    }, 60_000, `task '${task}' to hold a plan${destroy === undefined ? "" : ` destroying ${destroy}`}`);
  const start = async () => {
    rt = await startRuntime(config);
    api = await startDaemonApi(rt, { port: 0 }, { register: false });
  };
  const stop = async () => {
    await api?.stop();
    await rt?.close();
  };

  before(async () => {
    consul = await startConsul();
    tmp = await tempDir();
    for (const s of ["web", "api", "cache", "pred", "boot"]) await register(s, [1, 2, 3]);
    await register("db", [1]);
    const pool = (task: string, service: string, guards: string, approval?: string) =>
      `new GuardedPool(${JSON.stringify(task)}, ${JSON.stringify(dir(task))}, ${guards}, ${approval ? JSON.stringify(approval) : "undefined"}, ${JSON.stringify(service)})`;
    config = await writeConfig(tmp.dir, {
      consulAddress: consul.address,
      tasks: [
        pool("guarded", "web", `{ maxDestroy: 0 }`),
        pool("rejected", "api", `{ maxDestroyPercent: 20 }`),
        pool("superseded", "db", `{ neverEmpty: ["local_file"] }`),
        pool("reviewed", "cache", `false`, "always"),
        pool("predicate", "pred", `{ check: (plan) => (plan.resource_changes ?? []).some((c) => c.change.actions.includes("delete")) ? "no deletes today" : undefined }`),
        pool("restarted", "boot", `{ maxDestroy: 0 }`),
      ],
    });
    await start();
    await waitFor(async () => (await files("superseded")).length === 1, 120_000, "the first apply of superseded");
    for (const t of ["guarded", "rejected", "predicate", "restarted"]) await waitFor(async () => (await files(t)).length === 3, 120_000, `the first apply of ${t}`);
  });
  after(async () => {
    await stop();
    await consul?.stop();
    await tmp?.cleanup();
  });

  it("holds a change that destroys more than maxDestroy: status, event, metric and log say so; nothing is applied", async () => {
    // One instance at a time (Consul deregisters one per call): the second change supersedes the first hold.
    await deregister("web", [2, 3]);
    const held = await heldNow("guarded", 2);
    assert.deepEqual(held.reasons, ["the plan destroys 2 resources, more than maxDestroy (0)"]);
    assert.deepEqual(held.changes, { add: 0, change: 0, destroy: 2 });
    assert.equal(held.why, "guards");
    assert.deepEqual(held.resources.map((r: { action: string }) => r.action), ["delete", "delete"]);
    assert.equal(held.approve, "POST /v1/tasks/guarded/approve");
    const s = await status("guarded");
    assert.equal(s.events[0].outcome, "held");
    assert.equal(s.events[0].success, false);
    assert.deepEqual(s.events[0].hold.reasons, held.reasons);
    assert.match(s.events[0].error.message, /plan held for approval \(0 to add, 0 to change, 2 to destroy\).*cts approve guarded/);
    assert.deepEqual(await files("guarded"), named("web-1", "web-2", "web-3"), "nothing was destroyed");
    const metrics = await (await fetch(`${api.url}/metrics`)).text();
    assert.match(metrics, /^cts_task_plan_held\{task="guarded"\} 1$/m);
    assert.match(metrics, /^cts_task_runs_total\{task="guarded",outcome="held"\} [1-9]/m);
    assert.ok(rt.lines.some((l) => /task 'guarded'.*plan held for approval/.test(l)), "a log line says it");
    const st = await cts(["status"]);
    assert.equal(st.code, 0, st.stderr);
    assert.match(st.stdout, /guarded\s+held\s+true/);
    assert.match(st.stdout, /==> guarded: plan held since .*: \+0 ~0 -2\n  reason: the plan destroys 2 resources, more than maxDestroy \(0\)/);
    assert.match(st.stdout, /decide: cts approve guarded/);
  });

  it("approving applies exactly the held plan (POST /v1/tasks/{name}/approve), then nothing is held; a second approve is 409", async () => {
    await heldNow("guarded", 2);
    const res = await http(api.url, "POST", "/v1/tasks/guarded/approve", {});
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.approve.outcome, "applied");
    assert.deepEqual(res.body.approve.summary, { add: 0, change: 0, destroy: 2 });
    assert.deepEqual(await files("guarded"), named("web-1"));
    const s = await status("guarded");
    assert.equal(s.held, undefined);
    assert.equal(s.status, "successful");
    assert.equal(s.events[0].outcome, "applied");
    const again = await http(api.url, "POST", "/v1/tasks/guarded/approve", {});
    assert.equal(again.status, 409, again.text);
    assert.equal((await http(api.url, "POST", "/v1/tasks/nope/approve", {})).status, 404);
    assert.doesNotMatch(await (await fetch(`${api.url}/metrics`)).text(), /^cts_task_plan_held\{task="guarded"\} 1$/m);
    // No kept plan is left behind in the task's folder.
    assert.deepEqual((await readdir(rt.driver.taskDir("guarded"))).filter((f) => f.includes("kept") || f.includes("hold")), []);
  });

  it("rejecting discards the held plan (cts reject): nothing applied, an event says so, the same inputs are not planned again", async () => {
    await deregister("api", [1, 2]);
    const held = await heldNow("rejected", 2);
    assert.match(held.reasons[0], /destroys 2 of 3 resources \(66\.7 %\), more than maxDestroyPercent \(20 %\)/);
    const out = await cts(["reject", "rejected"]);
    assert.equal(out.code, 0, out.stdout + out.stderr);
    assert.match(out.stdout, /task 'rejected': the held plan \(\+0 ~0 -2\) was rejected and discarded/);
    const s = await status("rejected");
    assert.equal(s.held, undefined);
    assert.equal(s.events[0].outcome, "rejected");
    assert.deepEqual(await files("rejected"), named("api-1", "api-2", "api-3"));
    const runs = rt.controller.runCount("rejected");
    const outcome = await rt.controller.runNow("rejected");
    assert.equal(outcome.outcome, "rejected", "the rejected inputs are not planned again");
    assert.equal(rt.controller.runCount("rejected"), runs + 1);
    const none = await cts(["reject", "rejected"]);
    assert.notEqual(none.code, 0);
    assert.match(none.stderr, /holds no plan waiting for approval/);
    // New inputs are planned and checked again: back to three instances applies (nothing destroyed).
    await register("api", [1, 2]);
    await waitFor(async () => (await status("rejected")).events[0].outcome === "no-op" || (await status("rejected")).events[0].outcome === "applied", 60_000, "the new inputs to run");
    assert.deepEqual(await files("rejected"), named("api-1", "api-2", "api-3"));
  });

  it("a newer change supersedes a held one: back to what is applied drops the hold", async () => {
    await deregister("db", [1]);
    const held = await heldNow("superseded");
    assert.deepEqual(held.reasons, ["the plan leaves local_file empty (1 instance now, none after; neverEmpty)"]);
    await register("db", [1]);
    await waitFor(async () => (await status("superseded")).held === undefined, 60_000, "the hold to be superseded");
    assert.deepEqual(await files("superseded"), named("db-1"));
    const told = rt.lines.filter((l) => l.includes("superseded"));
    assert.ok(told.some((l) => /task 'superseded': the held plan was dropped: the inputs are back to what is applied/.test(l)), told.join("\n"));
  });

  it('approval: "always" holds every plan, the first one too, until `cts approve`', async () => {
    const held = await heldNow("reviewed");
    assert.equal(held.why, "always");
    assert.deepEqual(held.changes, { add: 3, change: 0, destroy: 0 });
    assert.deepEqual(await files("reviewed"), []);
    const out = await cts(["approve", "reviewed"]);
    assert.equal(out.code, 0, out.stdout + out.stderr);
    assert.match(out.stdout, /task 'reviewed': applied \+3 ~0 -0/);
    assert.deepEqual(await files("reviewed"), named("cache-1", "cache-2", "cache-3"));
    await deregister("cache", [3]);
    const next = await heldNow("reviewed", 1);
    assert.deepEqual(next.changes, { add: 0, change: 0, destroy: 1 });
  });

  it("a predicate over the plan JSON holds with its reason (run where the task's code runs)", async () => {
    await deregister("pred", [3]);
    const held = await heldNow("predicate", 1);
    assert.deepEqual(held.reasons, ["guards.check: no deletes today"]);
    assert.deepEqual(await files("predicate"), named("pred-1", "pred-2", "pred-3"));
  });

  it("newer inputs replace a held plan with their own, checked again; approving applies the newest", async () => {
    // 'predicate' holds a plan that deletes pred-3; now pred-2 goes too: the approved plan is not that one.
    await deregister("pred", [2]);
    await waitFor(async () => (await status("predicate")).held?.changes.destroy === 2, 60_000, "the newer plan to be held");
    const res = await http(api.url, "POST", "/v1/tasks/predicate/approve", {});
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.approve.outcome, "applied", "the same inputs: the held plan applies");
    assert.deepEqual(await files("predicate"), named("pred-1"));
  });

  it("a hold survives a restart of the daemon, and approving it afterwards applies it", async () => {
    await deregister("boot", [3]);
    const held = await heldNow("restarted", 1);
    await stop();
    await start();
    // The first run after the start finds the same inputs: still held, no new plan.
    await waitFor(() => rt.controller.runCount("restarted") >= 1, 60_000, "the first run after the restart");
    const after = await status("restarted");
    assert.equal(after.held.held_at, held.held_at, "the same hold");
    assert.deepEqual(await files("restarted"), named("boot-1", "boot-2", "boot-3"));
    const res = await http(api.url, "POST", "/v1/tasks/restarted/approve", {});
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.approve.outcome, "applied");
    assert.deepEqual(await files("restarted"), named("boot-1", "boot-2"));
    assert.equal((await status("restarted")).held, undefined);
  });

  it("a task created through the API takes the guards block and cts_allow_empty (the CTS HCL keys); bad values are 400 with the field", async () => {
    await writeEchoModule(tmp.dir);
    await register("apiheld", [1, 2]);
    const out = join(tmp.dir, "api-held.txt");
    const task = (extra: Record<string, unknown>) => ({
      task: { name: "api-held", module: "./modules/echo", condition: { services: { names: ["apiheld"] } }, variables: { path: out }, buffer_period: { enabled: false }, ...extra },
    });
    const bad = await http(api.url, "POST", "/v1/tasks", task({ guards: { max_destroy: -1, approval: "never" }, cts_allow_empty: "no" }));
    assert.equal(bad.status, 400, bad.text);
    const said = bad.body.error.message as string;
    assert.match(said, /task\.guards\.max_destroy must be a whole number ≥ 0 \(got -1\)/);
    assert.match(said, /task\.guards\.approval must be "always"/);
    assert.match(said, /task\.cts_allow_empty must be true or false/);
    const created = await http(api.url, "POST", "/v1/tasks?run=now", task({ guards: { max_destroy: 0, approval: "always" }, cts_allow_empty: false }));
    assert.equal(created.status, 201, created.text);
    assert.equal(created.body.run.outcome, "held", "the first run's plan waits: created, not failed");
    assert.equal(created.body.run.held.approve, "POST /v1/tasks/api-held/approve");
    const held = await heldNow("api-held");
    assert.equal(held.why, "always", "approval: always from the create body");
    assert.equal(await readFile(out, "utf8").catch(() => ""), "", "nothing applied before approval");
    assert.deepEqual(rt.controller.view("api-held")!.guards, { guards: { maxDestroy: 0 }, approval: "always" });
    const approved = await http(api.url, "POST", "/v1/tasks/api-held/approve", {});
    assert.equal(approved.status, 200, approved.text);
    assert.match(await readFile(out, "utf8"), /apiheld-1,apiheld-2/);
    // cts_allow_empty: false — the pool emptying is refused, the file keeps its instances.
    await deregister("apiheld", [1, 2]);
    await waitFor(async () => (await status("api-held"))?.events?.some((e: { error?: { message: string } }) => /dropped from 2 instances to none/.test(e.error?.message ?? "")), 60_000, "the refused drop to none");
    assert.match(await readFile(out, "utf8"), /apiheld-1,apiheld-2/);
  });
});

