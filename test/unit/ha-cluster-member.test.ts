import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { LoadedConfig } from "../../src/config/load.ts";
import { createLogger } from "../../src/log/logger.ts";
import type { HaControl, TaskView } from "../../src/runtime/interfaces.ts";
import { ClusterMember } from "../../src/ha/cluster-member.ts";
import type { HaKv, KvItem, TxnOp } from "../../src/ha/kv.ts";
import { LeaderElection } from "../../src/ha/leader-election.ts";
import { SharedAssignment } from "../../src/ha/shared-assignment.ts";
import { resolveHaSettings } from "../../src/ha/settings.ts";
import { StateWriter } from "../../src/ha/writer.ts";
import { fakeClock, type FakeClock } from "../support/fake-clock.ts";

/**
 * Consul's KV and sessions in memory: blocking reads wait for any change (or their abort), a
 * destroyed session releases its locks, and every KV write is recorded.
 */
function fakeConsul() {
  const entries = new Map<string, KvItem>();
  const sessions = new Set<string>();
  const waiters = new Set<() => void>();
  let index = 1n;
  let nextSession = 1;
  const calls = { created: [] as string[], destroyed: [] as string[], released: [] as string[], puts: [] as string[], deleted: [] as string[] };
  /** `down`: every session call fails as with Consul unreachable. */
  const control = { down: false };
  const unreachable = () => new Error("connect ECONNREFUSED");
  const changed = () => {
    index++;
    for (const wake of [...waiters]) wake();
  };
  const set = (key: string, value: string, session?: string) => entries.set(key, { key, value, ...(session ? { session } : {}), modifyIndex: index });
  const blockAt = async (at: bigint | undefined, signal: AbortSignal | undefined) => {
    if (!at || at < index) return;
    await new Promise<void>((resolve, reject) => {
      const wake = () => (waiters.delete(wake), resolve());
      waiters.add(wake);
      signal?.addEventListener("abort", () => (waiters.delete(wake), reject(new Error("aborted"))), { once: true });
    });
  };
  const kv = {
    async get(key: string, o: { index?: bigint; signal?: AbortSignal } = {}) {
      await blockAt(o.index, o.signal);
      return { data: entries.get(key), index };
    },
    async list(prefix: string, o: { index?: bigint; signal?: AbortSignal } = {}) {
      await blockAt(o.index, o.signal);
      return { data: [...entries.values()].filter((e) => e.key.startsWith(prefix)), index };
    },
    async healthServiceAt(_service: string, _tag: string, o: { index?: bigint; signal?: AbortSignal } = {}) {
      await blockAt(o.index, o.signal);
      return { data: [], index };
    },
    async put(key: string, value: string) {
      calls.puts.push(key);
      set(key, value, entries.get(key)?.session);
      changed();
    },
    async delete(key: string) {
      calls.deleted.push(key);
      entries.delete(key);
      changed();
    },
    async acquire(key: string, session: string, value: string) {
      if (!sessions.has(session)) return false;
      const held = entries.get(key)?.session;
      if (held && held !== session && sessions.has(held)) return false;
      set(key, value, session);
      changed();
      return true;
    },
    async release(key: string, session: string) {
      const e = entries.get(key);
      if (e?.session !== session) return false;
      calls.released.push(key);
      set(key, e.value);
      changed();
      return true;
    },
    async txn(ops: TxnOp[]) {
      for (const op of ops) if (op.verb === "check-session" && entries.get(op.key)?.session !== op.session) return false;
      for (const op of ops) {
        if (op.verb === "set") set(op.key, op.value);
        else if (op.verb === "delete") entries.delete(op.key);
        else if (op.verb === "delete-tree") for (const k of [...entries.keys()]) if (k.startsWith(op.key)) entries.delete(k);
      }
      changed();
      return true;
    },
    async createSession() {
      if (control.down) throw unreachable();
      const id = `s-${nextSession++}`;
      sessions.add(id);
      calls.created.push(id);
      return id;
    },
    async renewSession(id: string) {
      if (control.down) throw unreachable();
      return sessions.has(id) ? "ok" : "gone";
    },
    async destroySession(id: string) {
      calls.destroyed.push(id);
      sessions.delete(id);
      for (const e of entries.values()) if (e.session === id) set(e.key, e.value);
      changed();
    },
    async sessionsNamed() {
      return [];
    },
  } as unknown as HaKv;
  /** Consul invalidates a session (an operator destroyed it): its locks are free, its next renewal answers "gone". */
  const invalidate = (id: string) => {
    sessions.delete(id);
    for (const e of entries.values()) if (e.session === id) set(e.key, e.value);
    changed();
  };
  /** Consul's timer ended a session; this member has not read the lock since (its next renewal answers "gone"). */
  const expire = (id: string) => void sessions.delete(id);
  return { kv, entries, calls, control, invalidate, expire };
}

/** The controller as a cluster member sees it: paused or running, and the tasks it owns in shared mode. */
function fakeController(tasks: string[], chains: Record<string, string> = {}) {
  const owned = new Set<string>();
  const c = {
    paused: false,
    resumed: 0,
    shared: false,
    owned,
    /** Runs in progress, and the kill deadlines (ms from then) fences gave them. */
    running: 0,
    fences: [] as number[],
    ctrl: {
      fence(killWithinMs: number) {
        c.fences.push(killWithinMs);
        return c.running;
      },
      get isPaused() {
        return c.paused;
      },
      async pause() {
        c.paused = true;
      },
      async resume() {
        c.paused = false;
        c.resumed++;
      },
      restore: () => [],
      onRetry: () => () => {},
      shareTasks: () => void (c.shared = true),
      own: (t: string) => void owned.add(t),
      disown: async (t: string) => void owned.delete(t),
      mine: (t: string) => (c.shared ? owned.has(t) : !c.paused),
      ownedNames: () => (c.shared ? [...owned] : tasks),
      taskNames: () => tasks,
      chainOf: (t: string) => chains[t] ?? t,
      view: (t: string) => (tasks.includes(t) ? ({ name: t, enabled: true, running: false } as TaskView) : undefined),
    } as unknown as HaControl,
  };
  return c;
}

function member(opts: { mode: "leader" | "shared"; clock: FakeClock; tasks?: string[]; chains?: Record<string, string>; settle?: string; compatIntervalMs?: number }) {
  const config = { id: "cts-a", highAvailability: { cluster: { name: "t", mode: opts.mode, storage: { sessionTtl: "2s" }, ...(opts.settle ? { settle: opts.settle } : {}) } }, tasks: [] };
  const loaded = { config, dir: "/nonexistent" } as unknown as LoadedConfig;
  const settings = resolveHaSettings(config);
  const consul = fakeConsul();
  const controller = fakeController(opts.tasks ?? [], opts.chains);
  const lines: string[] = [];
  const log = createLogger({ write: (line) => void lines.push(line), level: "info" });
  const writer = new StateWriter(consul.kv, settings.lockKey, log, opts.clock);
  const cluster = new ClusterMember(
    { controller: controller.ctrl, consul: {} as never, log },
    loaded,
    { kv: consul.kv, writer },
    opts.mode === "shared" ? (parts) => new SharedAssignment(parts) : (parts) => new LeaderElection(parts),
    { clock: opts.clock, stopGraceMs: 100, ...(opts.compatIntervalMs ? { compatIntervalMs: opts.compatIntervalMs } : {}) },
  );
  cluster.setLocalAddress("http://127.0.0.1:8558");
  const logged = (text: string) => lines.some((l) => l.includes(text));
  return { cluster, settings, consul, controller, lines, logged };
}

describe("a cluster member electing a leader", () => {
  it("takes the free leader lock and runs the tasks; a stop releases the lock, ends the session, removes its record and leaves no timer", async () => {
    const clock = fakeClock();
    const m = member({ mode: "leader", clock });
    await m.cluster.start();
    await clock.runUntil(() => m.controller.resumed === 1, "leading");
    assert.equal(m.consul.entries.get(m.settings.lockKey)?.session, "s-1");
    assert.equal(m.cluster.fence("any", "run"), undefined, "the leader writes, fenced with its lock");
    assert.ok(m.logged("ha: acquired leadership lock: id=cts-a"));
    assert.ok(m.consul.entries.has(`${m.settings.membersPrefix}cts-a`), "its member record is published");

    assert.deepEqual(await m.cluster.stop(), []);
    assert.deepEqual(m.consul.calls.released, [m.settings.lockKey], "the lock is released before the session ends (no lock delay)");
    assert.deepEqual(m.consul.calls.destroyed, ["s-1"]);
    assert.ok(!m.consul.entries.has(`${m.settings.membersPrefix}cts-a`), "its member record is removed");
    assert.equal(m.controller.paused, true);
    assert.ok(m.logged("ha: released leadership (graceful stop)"));
    assert.equal(m.cluster.fence("any", "run"), null, "a stopped member writes nothing");
    assert.equal(clock.pending(), 0, "no renewal, compatibility check, query or wait is left");
  });

  for (const mode of ["leader", "shared"] as const)
    it(`repeats the compatibility check on its clock (${mode} mode)`, async () => {
      const clock = fakeClock();
      const m = member({ mode, clock, compatIntervalMs: 60_000 });
      const record = `${m.settings.membersPrefix}cts-a`;
      const writes = () => m.consul.calls.puts.filter((k) => k === record).length;
      await m.cluster.start();
      await clock.runUntil(() => writes() > 0, "the first check");
      const before = writes();
      await clock.runUntil(() => clock.now() >= 60_000 && writes() > before, "the next check");
      assert.ok(clock.now() < 61_000, `checked again one interval after the start (at ${clock.now()} ms)`);
      await m.cluster.stop();
      assert.equal(clock.pending(), 0);
    });

  it("steps down when Consul ends its session (its lock is free), and leads again with a new session", async () => {
    const clock = fakeClock();
    const m = member({ mode: "leader", clock });
    await m.cluster.start();
    await clock.runUntil(() => m.controller.resumed === 1, "leading");
    m.consul.invalidate("s-1");
    await clock.runUntil(() => m.controller.resumed === 2, "leading again");
    assert.ok(m.logged("ha: lost leadership: the leader lock is no longer held by this instance's session"));
    assert.ok(m.logged("ha: session ended (Consul invalidated this instance's session); a new one is created when Consul answers"));
    assert.equal(m.consul.entries.get(m.settings.lockKey)?.session, "s-2");
    await m.cluster.stop();
  });

  it("cancels its runs with time for a graceful stop when it fences itself on time (Consul cannot give the lock away yet)", async () => {
    const clock = fakeClock();
    const m = member({ mode: "leader", clock });
    await m.cluster.start();
    await clock.runUntil(() => m.controller.resumed === 1, "leading");
    m.controller.running = 1;
    m.consul.control.down = true;
    await clock.runUntil(() => m.controller.fences.length > 0, "fenced");
    // TTL 2 s: fenced 2 s after the last renewal was sent; Consul may give the lock away at 4 s; less a 1 s margin.
    assert.equal(m.controller.fences[0], 1_000);
    assert.ok(!m.logged("killed at once"));
    m.consul.control.down = false;
    await m.cluster.stop();
  });

  it("kills its runs at once when it resumes from a stall longer than Consul keeps its session, and says so", async () => {
    const clock = fakeClock();
    const m = member({ mode: "leader", clock });
    await m.cluster.start();
    await clock.runUntil(() => m.controller.resumed === 1, "leading");
    m.controller.running = 1;
    // SIGSTOP of the whole process for 45 s: no timer fires meanwhile, every one is late after it;
    // Consul ended the session meanwhile.
    clock.stall(45_000);
    m.consul.expire("s-1");
    await clock.runUntil(() => m.controller.fences.length > 0, "fenced after the stall");
    assert.ok(m.controller.fences[0]! <= 0, `no time left for a graceful stop (${m.controller.fences[0]} ms)`);
    assert.ok(m.logged("ha: this instance was stalled for 45"), m.lines.join("\n"));
    assert.ok(m.logged("1 run(s) in progress killed at once"));
    await m.cluster.stop();
  });

  it("kills its runs at once when the leader lock is no longer its own (Consul expired the session during a stall)", async () => {
    const clock = fakeClock();
    const m = member({ mode: "leader", clock });
    await m.cluster.start();
    await clock.runUntil(() => m.controller.resumed === 1, "leading");
    m.controller.running = 1;
    clock.stall(45_000);
    m.consul.invalidate("s-1");
    await clock.runUntil(() => m.controller.fences.length > 0, "fenced");
    assert.equal(m.controller.fences[0], 0);
    assert.ok(m.logged("ha: lost leadership: the leader lock is no longer held by this instance's session"));
    assert.ok(m.logged("1 run(s) in progress killed at once"));
    await m.cluster.stop();
  });

  it("stops without Consul: skips, and names, every step that needs it", async () => {
    const clock = fakeClock();
    const m = member({ mode: "leader", clock });
    await m.cluster.start();
    await clock.runUntil(() => m.controller.resumed === 1, "leading");
    const skipped = await m.cluster.stop({ consulUnreachable: true });
    assert.deepEqual(skipped, ["releasing the leader lock (Consul frees it when the session's TTL 2s runs out)", "destroying the HA session", "removing the member record"]);
    assert.deepEqual(m.consul.calls.released, []);
    assert.deepEqual(m.consul.calls.destroyed, []);
    assert.ok(m.logged("ha: stopped leading; the leader lock goes with the session's TTL (Consul is unreachable)"));
  });
});

describe("a cluster member sharing the tasks", () => {
  it("takes its share once the membership was stable for `settle` on its clock, and gives every lock back at a stop", async () => {
    const clock = fakeClock();
    const m = member({ mode: "shared", clock, tasks: ["a", "b", "c"], settle: "5s" });
    assert.equal(m.controller.shared, true, "only owned tasks run");
    await m.cluster.start();
    await clock.runUntil(() => m.logged("ha: member 'cts-a' is live"), "live");
    assert.equal(m.consul.entries.get(`${m.settings.alivePrefix}cts-a`)?.session, "s-1", "its liveness lock");
    const liveAt = clock.now();
    await clock.runUntil(() => m.controller.owned.size === 3, "every task owned");
    assert.ok(clock.now() - liveAt >= 5_000, `not before the membership was stable for 5 s (${clock.now() - liveAt} ms)`);
    assert.ok(m.logged("ha: membership stable (1 member(s)); taking this member's share"));
    assert.equal(m.cluster.fence("a", "run"), `${m.settings.tasksPrefix}a/owner`, "a run's writes are fenced with the task's owner lock");
    assert.equal(m.cluster.fence("z", "task"), `${m.settings.alivePrefix}cts-a`, "a task nobody owns yet: with the liveness lock");

    assert.deepEqual(await m.cluster.stop(), []);
    assert.deepEqual(m.consul.calls.destroyed, ["s-1"], "destroying the session frees the liveness and owner locks");
    assert.ok([...m.consul.entries.values()].every((e) => !e.session), "no lock is left held");
    assert.equal(clock.pending(), 0, "no retry, settle timer, query or wait is left");
  });

  it("fences itself when no renewal succeeds for a TTL, and rejoins with a new session", async () => {
    const clock = fakeClock();
    const m = member({ mode: "shared", clock, tasks: ["a"], settle: "0s" });
    await m.cluster.start();
    await clock.runUntil(() => m.controller.owned.size === 1, "owning its task");
    m.consul.control.down = true;
    await clock.runUntil(() => m.logged("ha: lost the session: no session renewal succeeded"), "fenced");
    assert.equal(m.controller.paused, true, "every run stopped");
    await clock.runUntil(() => m.logged("ha: cannot join the cluster (attempt 1): connect ECONNREFUSED"), "a failed rejoin");
    m.consul.control.down = false;
    await clock.runUntil(() => m.consul.entries.get(`${m.settings.alivePrefix}cts-a`)?.session === "s-2", "live again with a new session");
    await m.cluster.stop();
  });

  it("takes a chain's tasks whole: while one of its locks is held elsewhere it takes none of them, and takes them all once it is free", async () => {
    const clock = fakeClock();
    const m = member({ mode: "shared", clock, tasks: ["alpha", "pool", "pool-reader"], chains: { "pool-reader": "pool" }, settle: "0s" });
    const lock = (t: string) => `${m.settings.tasksPrefix}${t}/owner`;
    // Another member's session still holds pool-reader's lock (it is handing the chain over).
    const other = await m.consul.kv.createSession("cts-b", 2_000, 0);
    assert.ok(await m.consul.kv.acquire(lock("pool-reader"), other, JSON.stringify({ id: "cts-b", address: "http://127.0.0.1:1" })));
    await m.cluster.start();
    await clock.runUntil(() => m.controller.owned.has("alpha"), "a task outside the chain taken");
    const t = clock.now();
    await clock.runUntil(() => clock.now() >= t + 5_000, "a few more rounds");
    assert.ok(!m.controller.owned.has("pool") && !m.controller.owned.has("pool-reader"), "no task of the chain runs while part of it is elsewhere");
    assert.equal(m.consul.entries.get(lock("pool"))?.session, undefined, "pool's lock is not kept meanwhile");
    assert.ok(!m.logged("ha: acquired task 'pool'"));
    await m.consul.kv.release(lock("pool-reader"), other);
    await clock.runUntil(() => m.controller.owned.has("pool") && m.controller.owned.has("pool-reader"), "the whole chain taken");
    await m.cluster.stop();
  });
});
