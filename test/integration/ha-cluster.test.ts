import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { startConsul, type ConsulAgent } from "../support/consul.ts";
import { tempDir, waitFor } from "../support/cts.ts";
import { http, writeEchoModule } from "../support/api.ts";
import { freePort } from "../support/ports.ts";
import { firstToPrint, startCtsProcess, writeHaConfig, type CtsProcess } from "../support/cts-process.ts";
import { parseMetrics, sampleValue } from "../support/prometheus.ts";

const TTL_MS = 3_000;
const CLUSTER = "ha-test";
const read = (p: string) => readFile(p, "utf8").catch(() => "");

/** Who holds the lock, according to Consul. */
async function lockHolder(consul: ConsulAgent): Promise<string | undefined> {
  const entries = await consul.api("GET", `/v1/kv/consul-terraform-sync/${CLUSTER}/leader`).catch(() => undefined);
  const e = entries?.[0];
  if (!e?.Session) return undefined;
  return JSON.parse(Buffer.from(e.Value, "base64").toString("utf8")).id;
}

const leaderLines = (p: CtsProcess, from = 0) => p.linesSince(from).filter((l) => /ha: acquired leadership lock: id=/.test(l));

describe("high availability with three cts processes (real Consul, real OpenTofu)", () => {
  let consul: ConsulAgent;
  let tmp: { dir: string; cleanup(): Promise<void> };
  const procs = new Map<string, CtsProcess>();
  const urls = new Map<string, string>();
  const dirs = new Map<string, string>();
  let members: string;
  let applies: string;
  let echo: string;
  let leaderId: string;
  /** GET /v1/status/tasks on the leader just before it was killed. */
  let statusBeforeFailover: Record<string, any>;
  let echoEventIds: string[];

  const api = (id: string, method: string, path: string, body?: unknown) => http(urls.get(id)!, method, path, body);
  const running = () => [...procs.values()].filter((p) => p.running());
  const followers = () => running().filter((p) => p.name !== leaderId);
  const config = async (id: string, opts: { module?: boolean; tasks?: string[]; port?: number } = {}) => {
    const dir = join(tmp.dir, id);
    dirs.set(id, dir);
    if (opts.module !== false) await writeEchoModule(dir);
    const port = opts.port ?? (await freePort());
    urls.set(id, `http://127.0.0.1:${port}`);
    return writeHaConfig(dir, {
      consulAddress: consul.address,
      id,
      cluster: CLUSTER,
      sessionTtl: `${TTL_MS / 1000}s`,
      apiPort: port,
      tasks: opts.tasks ?? [`new AppendMembers("members", ${JSON.stringify(members)}, ${JSON.stringify(applies)})`, `new MemberList("idle", ${JSON.stringify(join(tmp.dir, "idle.txt"))}, "nothing")`],
    });
  };

  before(async () => {
    consul = await startConsul({ extraConfig: 'session_ttl_min = "1s"' });
    tmp = await tempDir("cts-ha-");
    members = join(tmp.dir, "members.txt");
    applies = join(tmp.dir, "applies.log");
    echo = join(tmp.dir, "echo.txt");
    await consul.register({ Name: "web", ID: "web-1", Address: "10.0.0.1", Port: 80 });
    for (const id of ["cts-a", "cts-b", "cts-c"]) procs.set(id, startCtsProcess(await config(id), { name: id }));
  });
  after(async () => {
    await Promise.all([...procs.values()].map((p) => p.terminate(15_000)));
    await consul?.stop();
    await tmp?.cleanup();
  });

  it("elects exactly one leader, which runs the tasks; the others only follow", async () => {
    const started = Date.now();
    const first = (await firstToPrint([...procs.values()], /ha: acquired leadership lock: id=/, 90_000)).p;
    leaderId = first.name;
    console.log(`# first leader ${leaderId} elected ${Date.now() - started} ms after the processes were started`);
    await first.waitForLine(/ctrl: executing all tasks once through/, 60_000);
    await waitFor(async () => (await read(applies)) === "web-1\n", 60_000, "the leader's first apply");
    // Instead of giving the followers time to misbehave: each has followed the leader's state past
    // its first apply (its mirror answers with the leader's run), so it has been up, in the
    // cluster and following all along.
    const leaderState = async () => JSON.stringify((await api(leaderId, "GET", "/v1/status/tasks")).body);
    await waitFor(async () => JSON.parse(await leaderState()).members?.status === "successful", 30_000, "the leader to store its first run");
    for (const p of procs.values()) {
      await p.waitForLine(/api: listening on/, 30_000);
      await p.waitForLine(/ha: joining cluster 'ha-test' as/, 30_000);
      if (p !== first) await waitFor(async () => JSON.stringify((await api(p.name, "GET", "/v1/status/tasks")).body) === (await leaderState()), 30_000, `${p.name} to mirror the leader's first run`);
      assert.equal(leaderLines(p).length, p === first ? 1 : 0, `${p.name}:\n${p.logs()}`);
      if (p !== first) assert.doesNotMatch(p.logs(), /executing all tasks once through|\[members\]/, `${p.name} ran nothing`);
    }
    assert.equal(await lockHolder(consul), leaderId);
    for (const p of procs.values()) {
      const metrics = parseMetrics(await (await fetch(`${urls.get(p.name)!}/metrics`)).text());
      assert.equal(sampleValue(metrics, "cts_ha_leader"), p === first ? 1 : 0, `${p.name}: the leader gauge`);
      assert.equal(sampleValue(metrics, "cts_ha_leadership_changes_total"), p === first ? 1 : 0, `${p.name}: leadership changes`);
    }
    assert.match(first.logs(), /\[INFO\] ha: attempting to acquire leadership lock: lock_path=consul-terraform-sync\/ha-test\/leader/);
  });

  it("followers redirect task-changing calls to the leader and answer reads from the stored state", async () => {
    const redirect = new RegExp(`^this instance is not the leader\\. Redirect the request to the leader: id=${leaderId}, address=${urls.get(leaderId)!.replace(/[.]/g, "\\.")}$`);
    const task = { task: { name: "echo", module: "./modules/echo", condition: { services: { names: ["web"] } }, variables: { path: echo } } };
    for (const f of followers()) {
      for (const [method, path, body] of [["POST", "/v1/tasks", task], ["PATCH", "/v1/tasks/idle", { enabled: false }], ["DELETE", "/v1/tasks/members", undefined]] as const) {
        const res = await api(f.name, method, path, body);
        assert.equal(res.status, 400, `${f.name} ${method} ${path}: ${res.text}`);
        assert.match(res.body.error.message, redirect);
      }
    }
    const created = await api(leaderId, "POST", "/v1/tasks?run=now", task);
    assert.equal(created.status, 201, created.text);
    assert.equal(await read(echo), "hello web-1\n");
    assert.equal((await api(leaderId, "PATCH", "/v1/tasks/idle", { enabled: false })).status, 200);
    const onLeader = (await api(leaderId, "GET", "/v1/status/tasks")).body;
    assert.deepEqual(Object.keys(onLeader).sort(), ["echo", "idle", "members"]);
    assert.equal(onLeader.idle.enabled, false);
    for (const f of followers()) {
      // The leader answered after storing the change; the follower's mirror follows a blocking query.
      await waitFor(async () => JSON.stringify((await api(f.name, "GET", "/v1/status/tasks")).body) === JSON.stringify(onLeader), 30_000, `${f.name} to mirror the state`);
      const echoTask = (await api(f.name, "GET", "/v1/tasks/echo")).body.task;
      assert.equal(echoTask.module, "./modules/echo");
      assert.equal(echoTask.origin, "api");
      // The same statuses; each answer names its own instance.
      const { instance: followerInstance, ...fromFollower } = (await api(f.name, "GET", "/v1/status")).body;
      const { instance: leaderInstance, ...fromLeader } = (await api(leaderId, "GET", "/v1/status")).body;
      assert.deepEqual(fromFollower, fromLeader);
      assert.deepEqual([followerInstance.id, leaderInstance.id], [f.name, leaderId]);
    }
    assert.doesNotMatch(followers().map((f) => f.logs()).join("\n"), /\[echo\]/, "followers never ran the new task");
  });

  it("every member answers the cluster status alike: three healthy members and one leader", async () => {
    const normalized = async (id: string) => {
      const res = await api(id, "GET", "/v1/status/cluster");
      assert.equal(res.status, 200, res.text);
      assert.match(res.body.request_id, /^[0-9a-f-]{36}$/);
      const { request_id: _, ...rest } = res.body;
      return rest;
    };
    // Consul runs the registration's HTTP check every 10 s; wait for the first passing round.
    const status = await waitFor(
      async () => {
        const s = await normalized(leaderId);
        return s.members.length === 3 && s.members.every((m: any) => m.healthy) ? s : undefined;
      },
      30_000,
      "three healthy members",
    );
    assert.equal(status.cluster_name, CLUSTER);
    assert.deepEqual(status.leader, { id: leaderId, address: urls.get(leaderId) });
    assert.deepEqual(
      status.members.map((m: any) => [m.id, m.address, m.leader, m.service_name, m.compatible]),
      ["cts-a", "cts-b", "cts-c"].map((id) => [id, urls.get(id), id === leaderId, "consul-terraform-sync", true]),
    );
    for (const f of followers()) assert.deepEqual(await normalized(f.name), status, `${f.name} answers the same`);
    // The dashboard of any member shows the same members and leader.
    const ui = await api(followers()[0]!.name, "GET", "/ui/state");
    assert.equal(ui.status, 200, ui.text);
    assert.deepEqual(ui.body.cluster.leader, status.leader);
    assert.deepEqual(ui.body.cluster.members.map((m: any) => m.id).sort(), ["cts-a", "cts-b", "cts-c"]);
    const tagged = await consul.api("GET", `/v1/health/service/consul-terraform-sync?tag=cts-cluster:${CLUSTER}`);
    assert.equal(tagged.length, 3);
  });

  it("after kill -9 of the leader, a follower leads once Consul expires the session (never before the TTL) and applies the change made meanwhile, exactly once", async () => {
    statusBeforeFailover = (await api(leaderId, "GET", "/v1/status/tasks?include=events")).body;
    echoEventIds = statusBeforeFailover.echo.events.map((e: any) => e.id);
    const old = procs.get(leaderId)!;
    const marks = new Map([...procs].map(([id, p]) => [id, p.mark()]));
    const killedAt = Date.now();
    await old.kill9();
    // The change happens while nobody leads.
    await consul.register({ Name: "web", ID: "web-2", Address: "10.0.0.2", Port: 80 });
    const next = await firstToPrint(followers(), /ha: acquired leadership lock: id=/, 60_000, marks);
    const failoverMs = next.at - killedAt;
    console.log(`# failover after kill -9: ${failoverMs} ms (session TTL ${TTL_MS} ms, bound 2x TTL = ${2 * TTL_MS} ms); new leader ${next.p.name}`);
    // Consul expires a session up to 2x TTL after the last renewal it saw; how soon after that the
    // follower's line arrives depends on the machine, so only the wait above bounds it (generously).
    // Never before the TTL: a lock given away early would let two instances lead (a slow machine can
    // only make this later).
    assert.ok(failoverMs >= TTL_MS, `failover after ${failoverMs} ms: faster than Consul's TTL means the lock was given away early`);
    leaderId = next.p.name;
    await next.p.waitForLine(/ctrl: executing all tasks once through/, 60_000, marks.get(next.p.name));
    await waitFor(async () => (await read(applies)) === "web-1\nweb-1,web-2\n", 60_000, "the new leader to apply web-2");
    await waitFor(async () => (await read(echo)) === "hello web-1,web-2\n", 30_000, "the task created through the API to run on the new leader");
    // The watch's first data must not apply again. Instead of waiting for it to settle, a later
    // change is applied: a second apply of web-1,web-2 would have come before it.
    await consul.register({ Name: "web", ID: "web-3", Address: "10.0.0.3", Port: 80 });
    await waitFor(async () => (await read(applies)).endsWith("web-1,web-2,web-3\n"), 60_000, "the new leader to apply web-3");
    assert.deepEqual((await read(applies)).trim().split("\n"), ["web-1", "web-1,web-2", "web-1,web-2,web-3"], "each member list applied exactly once");
    for (const p of followers()) assert.equal(leaderLines(p, marks.get(p.name)).length, 0, `${p.name} did not lead too`);
  });

  it("the new leader continues the stored state: API tasks, enabled flags and events", async () => {
    const after = (await api(leaderId, "GET", "/v1/status/tasks?include=events")).body;
    assert.deepEqual(Object.keys(after).sort(), Object.keys(statusBeforeFailover).sort());
    for (const name of Object.keys(after)) {
      assert.equal(after[name].enabled, statusBeforeFailover[name].enabled, name);
      assert.equal(after[name].status, statusBeforeFailover[name].status, name);
    }
    assert.equal(after.idle.enabled, false, "disabled through the API before the failover, still disabled");
    const ids = after.echo.events.map((e: any) => e.id);
    assert.ok(ids.length > echoEventIds.length, "the new leader added its run");
    for (const id of echoEventIds) assert.ok(ids.includes(id), "the old leader's events are kept");
    // And every member still answers the same.
    for (const f of followers()) {
      await waitFor(
        async () => JSON.stringify((await api(f.name, "GET", "/v1/status/tasks?include=events")).body) === JSON.stringify((await api(leaderId, "GET", "/v1/status/tasks?include=events")).body),
        30_000,
        `${f.name} to mirror the new leader`,
      );
    }
  });

  it("the old leader, restarted, stays a follower and redirects to the new leader", async () => {
    const old = [...procs.values()].find((p) => !p.running())!;
    const from = old.mark();
    await old.restart();
    await old.waitForLine(/ha: joining cluster 'ha-test' as/, 60_000, from);
    // It has read the lock and follows its holder: it takes the lock only once that is gone.
    const redirect = new RegExp(`Redirect the request to the leader: id=${leaderId},`);
    const res = (await waitFor(
      async () => {
        const r = await api(old.name, "PATCH", "/v1/tasks/idle", { enabled: true });
        return r.status === 400 && redirect.test(r.body?.error?.message ?? "") ? r : undefined;
      },
      30_000,
      "the restarted instance to redirect to the leader",
    ))!;
    assert.match(res.body.error.message, redirect);
    assert.equal(leaderLines(old, from).length, 0, old.logs());
    assert.equal(await lockHolder(consul), leaderId);
    assert.doesNotMatch(old.logs().slice(from), /executing all tasks once through/);
    assert.deepEqual((await api(old.name, "GET", "/v1/status/tasks")).body, (await api(leaderId, "GET", "/v1/status/tasks")).body);
  });

  it("a member that could not run a task logs ha.compat and the cluster status shows it", async () => {
    // No echo module in its directory, and no 'idle' task in its config.
    const file = await config("cts-d", { module: false, tasks: [`new AppendMembers("members", ${JSON.stringify(members)}, ${JSON.stringify(applies)})`] });
    const d = startCtsProcess(file, { name: "cts-d" });
    procs.set("cts-d", d);
    await d.waitForLine(/\[ERROR\] ha\.compat: compatibility check failure: stat \.\/modules\/echo: no such file or directory/, 60_000);
    await d.waitForLine(/ha\.compat: compatibility check failure: task 'idle' \(class MemberList\) is in the config of leader/, 60_000);
    // The member record may be stored once per problem found: wait for the one with both.
    const member = await waitFor(
      async () =>
        (await api(leaderId, "GET", "/v1/status/cluster")).body.members.find((m: any) => m.id === "cts-d" && m.compatible === false && m.compatibility_problems?.length >= 2),
      30_000,
      "cts-d in the cluster status with both problems",
    );
    assert.equal(member.compatibility_problems.length, 2);
    assert.equal(member.leader, false);
    await d.terminate();
  });

  it("a graceful stop of the leader hands over at once (the lock is released, no TTL wait)", async () => {
    const leader = procs.get(leaderId)!;
    const marks = new Map([...procs].map(([id, p]) => [id, p.mark()]));
    const stopping = Date.now();
    const oldLeader = leaderId;
    assert.equal(await leader.terminate(), 0);
    // The moment it exited, the lock is free or already someone else's: released, not left to
    // expire (an unreleased lock stays with its session for up to 2 x TTL after the last renewal).
    assert.notEqual(await lockHolder(consul), oldLeader, "the stopped leader released the lock");
    const next = await firstToPrint(followers(), /ha: acquired leadership lock: id=/, 60_000, marks);
    console.log(`# handover after SIGTERM of the leader: ${next.at - stopping} ms (TTL ${TTL_MS} ms)`);
    assert.match(leader.logs().slice(marks.get(leaderId)), /ha: released leadership \(graceful stop\)/);
    leaderId = next.p.name;
  });

  it("--reset-storage clears the stored state when that instance becomes leader", async () => {
    await Promise.all(running().map((p) => p.terminate()));
    const reset = startCtsProcess(await config("cts-e", { port: Number(new URL(urls.get("cts-a")!).port) }), { name: "cts-e", args: ["--reset-storage"] });
    procs.set("cts-e", reset);
    await reset.waitForLine(/ha: --reset-storage: cleared the stored task state under consul-terraform-sync\/ha-test\/state\//, 60_000);
    await reset.waitForLine(/ctrl: executing all tasks once through/, 60_000);
    const status = (await api("cts-e", "GET", "/v1/status/tasks")).body;
    assert.deepEqual(Object.keys(status).sort(), ["idle", "members"], "the task created through the API is gone");
    assert.equal(status.idle.enabled, true, "back to the config's enabled flag");
  });
});
