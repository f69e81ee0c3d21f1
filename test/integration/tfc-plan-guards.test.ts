import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { readdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { startDaemonApi } from "../../src/daemon/api.ts";
import { constructId } from "../../src/index.ts";
import { TfcClient } from "../../src/tfc/client.ts";
import type { Run } from "../../src/tfc/types.ts";
import { http } from "../support/api.ts";
import { startConsul, type ConsulAgent } from "../support/consul.ts";
import { FIXTURE_TASKS, PUBLIC_API, startRuntime, tempDir, waitFor, type TestRuntime } from "../support/cts.ts";
import { startTfcServer, type TfcTestServer } from "../support/tfc-server/index.ts";

const TOKEN_VAR = "CTS_TEST_TFC_GUARDS_TOKEN";

/** The files GuardedPool writes for these instance ids. */
const named = (...ids: string[]) => ids.map((id) => `${constructId(id)}.txt`).sort();

/**
 * Plan guards and approvals on the Terraform Cloud driver, against the TFE-API test server (which
 * runs real OpenTofu) and a real Consul agent: a guarded task's run waits for confirmation, its plan
 * JSON is checked by the task's guards, and a refused plan holds that very run until `cts approve`
 * (the run is confirmed) or `cts reject` (the run is discarded).
 */
describe("plan guards and approvals on the Terraform Cloud driver (test server running OpenTofu, real Consul)", () => {
  let server: TfcTestServer;
  let consul: ConsulAgent;
  let tmp: { dir: string; cleanup(): Promise<void> };
  let config: string;
  let admin: TfcClient;
  let rt: TestRuntime;
  let api: { url: string; stop: () => Promise<void> };
  const out = (task: string) => join(tmp.dir, "out", task);
  const files = async (task: string) => (await readdir(out(task)).catch(() => [] as string[])).sort();
  const status = async (task: string) => (await http(api.url, "GET", `/v1/status/tasks/${task}?include=events`)).body[task];
  const register = async (service: string, ids: number[]) => {
    for (const i of ids) await consul.register({ Name: service, ID: `${service}-${i}`, Address: `10.0.0.${i}`, Port: 80 });
  };
  const deregister = async (service: string, ids: number[]) => {
    for (const i of ids) await consul.deregister(`${service}-${i}`);
  };
  /** The task's workspace's runs, newest first. */
  const runs = async (task: string): Promise<Run[]> => {
    const ws = await admin.workspaces.read(server.organization, `cts-${task}`);
    return ws ? admin.runs.listRecent(ws.id, 50) : [];
  };
  const heldNow = (task: string, destroy: number) =>
    waitFor(async () => {
      const held = (await status(task))?.held;
      return held && held.changes.destroy === destroy ? held : undefined;
    }, 180_000, `task '${task}' to hold a plan destroying ${destroy}`);
  /** The run the task's hold waits on: the newest run of its workspace, planned and not confirmed. */
  const heldRun = async (task: string): Promise<Run> => {
    const [newest] = await runs(task);
    assert.ok(newest, `task '${task}' has runs`);
    return newest;
  };
  const start = async () => {
    rt = await startRuntime(config);
    api = await startDaemonApi(rt, { port: 0 }, { register: false });
  };
  const stop = async () => {
    await api?.stop();
    await rt?.close();
  };

  before(async () => {
    [server, consul, tmp] = await Promise.all([startTfcServer({ variants: { costEstimation: true, policyChecks: true, monthlyCostPerResource: 2.5 } }), startConsul(), tempDir("cts-tfc-guards-")]);
    process.env[TOKEN_VAR] = server.token;
    admin = new TfcClient({ hostname: server.url, token: server.token });
    for (const s of ["web", "api", "cache", "boot"]) await register(s, [1, 2, 3]);
    const pool = (task: string, service: string) => `new GuardedPool(${JSON.stringify(task)}, ${JSON.stringify(out(task))}, { maxDestroy: 0 }, undefined, ${JSON.stringify(service)})`;
    config = join(tmp.dir, "cts.config.ts");
    await writeFile(
      config,
      `import { defineConfig } from ${JSON.stringify(PUBLIC_API)};
import { GuardedPool } from ${JSON.stringify(FIXTURE_TASKS)};
export default defineConfig({
  consul: { address: ${JSON.stringify(consul.address)} },
  driver: { terraformCloud: { hostname: ${JSON.stringify(server.url)}, organization: ${JSON.stringify(server.organization)}, token: { env: ${JSON.stringify(TOKEN_VAR)} }, workspaces: { prefix: "cts-" }, pollInterval: "200ms" } },
  api: { port: 0 },
  tasks: [${[pool("guarded", "web"), pool("rejected", "api"), pool("superseded", "cache"), pool("restarted", "boot")].join(", ")}],
});
`,
    );
    await start();
    for (const t of ["guarded", "rejected", "superseded", "restarted"]) await waitFor(async () => (await files(t)).length === 3, 240_000, `the first apply of ${t}`);
  });
  after(async () => {
    delete process.env[TOKEN_VAR];
    await stop();
    admin?.close();
    await Promise.all([server?.stop(), consul?.stop()]);
    await tmp?.cleanup();
  });

  it("a plan the guards pass is applied from the very run that was checked: one run, created without auto-apply and confirmed by cts", async () => {
    // The files appear while the server's run is still finishing ("applying"): wait for it to end.
    const all = await waitFor(async () => {
      const list = await runs("guarded");
      return list[0]?.status === "applying" ? undefined : list;
    }, 60_000, "the first run to finish") ?? [];
    assert.equal(all.length, 1, "one run: no second run was queued to apply");
    assert.equal(all[0]!.status, "applied");
    assert.equal(all[0]!.autoApply, false);
    assert.deepEqual(await files("guarded"), named("web-1", "web-2", "web-3"));
  });

  it("holds a run whose plan breaks a guard: nothing applied, the run stays planned and unconfirmed; the event carries TFC's policy check and cost estimate", async () => {
    await deregister("web", [2, 3]);
    const held = await heldNow("guarded", 2);
    assert.deepEqual(held.reasons, ["the plan destroys 2 resources, more than maxDestroy (0)"]);
    const run = await heldRun("guarded");
    assert.ok(["planned", "cost_estimated", "policy_checked"].includes(run.status), run.status);
    assert.equal(run.actions.isConfirmable, true);
    assert.equal(run.autoApply, false);
    assert.deepEqual(await files("guarded"), named("web-1", "web-2", "web-3"), "nothing was destroyed");
    const s = await status("guarded");
    const event = s.events[0];
    assert.equal(event.outcome, "held");
    assert.match(event.run_url, new RegExp(`/workspaces/cts-guarded/runs/${run.id}$`));
    assert.deepEqual(event.checks.policies, { status: "passed", passed: 1, failed: 0, hard_failed: 0, soft_failed: 0, advisory_failed: 0 });
    assert.deepEqual(event.checks.cost_estimate, { status: "finished", prior_monthly_cost: "7.50", proposed_monthly_cost: "2.50", delta_monthly_cost: "-5.00", resources: 1, matched_resources: 1 });
    assert.ok(rt.lines.some((l) => l.includes(`run ${run.id}: policies passed (1 passed); cost estimate finished: -5.00/month`)), "the driver's log says it");
  });

  it("approving confirms that very run (same id, no new run) and waits for it to apply", async () => {
    const before = await runs("guarded");
    const heldId = before[0]!.id;
    const res = await http(api.url, "POST", "/v1/tasks/guarded/approve", {});
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.approve.outcome, "applied");
    assert.deepEqual(res.body.approve.summary, { add: 0, change: 0, destroy: 2 });
    const after = await runs("guarded");
    assert.equal(after.length, before.length, "no run was queued to apply the approved plan");
    assert.equal(after[0]!.id, heldId);
    assert.equal(after[0]!.status, "applied");
    assert.deepEqual(await files("guarded"), named("web-1"));
    const s = await status("guarded");
    assert.equal(s.held, undefined);
    assert.equal(s.events[0].outcome, "applied");
    assert.match(s.events[0].run_url, new RegExp(`/runs/${heldId}$`));
  });

  it("rejecting discards the held run in Terraform Cloud; nothing is applied", async () => {
    await deregister("api", [1, 2]);
    await heldNow("rejected", 2);
    const run = await heldRun("rejected");
    const res = await http(api.url, "POST", "/v1/tasks/rejected/reject", {});
    assert.equal(res.status, 200, res.text);
    await waitFor(async () => (await admin.runs.read(run.id)).status === "discarded", 30_000, `run ${run.id} discarded`);
    assert.deepEqual(await files("rejected"), named("api-1", "api-2", "api-3"));
    assert.equal((await status("rejected")).events[0].outcome, "rejected");
  });

  it("a newer change discards the held run and plans anew: the new run is held in its place", async () => {
    await deregister("cache", [3]);
    await heldNow("superseded", 1);
    const first = await heldRun("superseded");
    await deregister("cache", [2]);
    await heldNow("superseded", 2);
    const second = await heldRun("superseded");
    assert.notEqual(second.id, first.id);
    assert.equal((await admin.runs.read(first.id)).status, "discarded");
    assert.equal(second.actions.isConfirmable, true);
    assert.deepEqual(await files("superseded"), named("cache-1", "cache-2", "cache-3"));
  });

  it("a hold survives a restart: the new instance still shows it, and approving then confirms the same run", async () => {
    await deregister("boot", [2, 3]);
    await heldNow("restarted", 2);
    const run = await heldRun("restarted");
    await stop();
    await start();
    const held = await heldNow("restarted", 2);
    assert.deepEqual(held.reasons, ["the plan destroys 2 resources, more than maxDestroy (0)"]);
    assert.equal((await admin.runs.read(run.id)).actions.isConfirmable, true, "the restart discarded nothing");
    const res = await http(api.url, "POST", "/v1/tasks/restarted/approve", {});
    assert.equal(res.status, 200, res.text);
    // The answer is that of the task's latest run (a start-up run queued behind the approval may follow it): the events tell which run applied.
    const events = (await status("restarted")).events as Array<{ outcome: string; run_url?: string }>;
    assert.ok(events.some((e) => e.outcome === "applied" && e.run_url?.endsWith(`/runs/${run.id}`)), JSON.stringify(events));
    assert.equal((await admin.runs.read(run.id)).status, "applied");
    assert.equal((await runs("restarted"))[0]!.id, run.id, "no new run");
    assert.deepEqual(await files("restarted"), named("boot-1"));
  });

  it("an approved run that someone discarded in Terraform Cloud is planned again (PLAN_NOT_FOUND) and, making the same changes as the approved one, applied by the new run", async () => {
    const run = await heldRun("superseded");
    await admin.runs.discard(run.id, "discarded by a person in the UI");
    const res = await http(api.url, "POST", "/v1/tasks/superseded/approve", {});
    assert.equal(res.status, 200, res.text);
    // The new plan makes the same changes as the approved one (same digest): it is applied without a second hold.
    assert.equal(res.body.approve.outcome, "applied");
    const after = await runs("superseded");
    assert.notEqual(after[0]!.id, run.id, "a new run applied it");
    assert.equal(after[0]!.status, "applied");
    assert.deepEqual(await files("superseded"), named("cache-1"));
    assert.ok(rt.lines.some((l) => l.includes(`the held run ${run.id} was discarded in Terraform Cloud`)), "the log says why it planned again");
  });
});
