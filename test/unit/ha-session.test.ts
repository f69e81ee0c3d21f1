import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { createLogger } from "../../src/log/logger.ts";
import { CtsError } from "../../src/errors/cts-error.ts";
import type { HaKv, TxnOp } from "../../src/ha/kv.ts";
import { LeaderSession, type SessionLoss } from "../../src/ha/session.ts";
import { resolveHaSettings } from "../../src/ha/settings.ts";
import { StateWriter } from "../../src/ha/writer.ts";
import { fakeClock, type FakeClock } from "../support/fake-clock.ts";

const log = createLogger({ write: () => {} });
const unreachable = () => new CtsError("HA_CONSUL_UNREACHABLE", "external", "connect ECONNREFUSED");

/** A fake of the session calls: each renewal answers what `renew` says. */
function fakeKv(renew: () => Promise<"ok" | "gone">) {
  const calls = { renew: 0, destroyed: [] as string[] };
  const kv = {
    createSession: async () => "s-1",
    renewSession: async () => {
      calls.renew++;
      return renew();
    },
    destroySession: async (id: string) => {
      calls.destroyed.push(id);
    },
  } as unknown as HaKv;
  return { kv, calls };
}

// 1 s is the shortest TTL the settings accept: renew every 500 ms, retry every 100 ms, fence at 1 s.
const settings = resolveHaSettings({ id: "cts-t", highAvailability: { cluster: { name: "t", storage: { sessionTtl: "1s" } } } });

describe("the leader session", () => {
  it("stays alive while renewals succeed, past several TTLs", async () => {
    const clock = fakeClock();
    const { kv, calls } = fakeKv(async () => "ok");
    const losses: SessionLoss[] = [];
    const s = await LeaderSession.create(kv, settings, log, (l) => losses.push(l), clock);
    await clock.runUntil(() => calls.renew === 6, "six renewals");
    assert.equal(clock.now(), 6 * settings.renewIntervalMs, "one renewal every TTL/2");
    assert.deepEqual(losses, []);
    assert.equal(s.alive, true);
    await s.destroy();
    assert.deepEqual(calls.destroyed, ["s-1"]);
    assert.equal(clock.pending(), 0, "destroy stops every timer");
  });

  it("fences itself one TTL after the last successful renewal was sent, while renewals keep failing", async () => {
    const clock = fakeClock();
    let ok = true;
    const { kv, calls } = fakeKv(async () => {
      if (ok) return "ok";
      throw unreachable();
    });
    const losses: Array<SessionLoss & { at: number }> = [];
    const s = await LeaderSession.create(kv, settings, log, (l) => losses.push({ ...l, at: clock.now() }), clock);
    await clock.runUntil(() => calls.renew === 1, "the first renewal");
    const lastGood = clock.now();
    assert.equal(lastGood, settings.renewIntervalMs);
    ok = false;
    await clock.runUntil(() => losses.length > 0, "the session to be fenced");
    assert.equal(losses.length, 1);
    assert.equal(losses[0]!.kind, "fenced");
    assert.match(losses[0]!.message, /no session renewal succeeded for 1s \(session TTL 1s\)/);
    assert.equal(losses[0]!.at - lastGood, settings.fenceAfterMs, "fenced exactly one TTL after the last good renewal was sent");
    assert.ok(calls.renew > 2, `it kept retrying the renewal meanwhile (${calls.renew} attempts)`);
    assert.equal(s.alive, false);
    assert.equal(clock.pending(), 0, "a fenced session renews no more");
  });

  it("reports an invalidated session as soon as Consul says it is gone", async () => {
    const clock = fakeClock();
    const { kv } = fakeKv(async () => "gone");
    const losses: Array<SessionLoss & { at: number }> = [];
    await LeaderSession.create(kv, settings, log, (l) => losses.push({ ...l, at: clock.now() }), clock);
    await clock.runUntil(() => losses.length > 0, "the loss");
    assert.deepEqual(losses.map((l) => [l.kind, l.at]), [["invalidated", settings.renewIntervalMs]], "told at the first renewal's answer");
    assert.equal(clock.pending(), 0);
  });
});

/** A fake transaction endpoint: records each transaction (and when, on `clock`), answers per `answer`. */
function fakeTxn(answer: (ops: TxnOp[]) => Promise<boolean>, clock?: FakeClock) {
  const txns: TxnOp[][] = [];
  const sentAt: number[] = [];
  const kv = {
    txn: async (ops: TxnOp[]) => {
      txns.push(ops);
      if (clock) sentAt.push(clock.now());
      return answer(ops);
    },
  } as unknown as HaKv;
  return { kv, txns, sentAt };
}

describe("the state writer", () => {
  it("fences every write with the lock session and keeps only the latest value of a key", async () => {
    const clock = fakeClock();
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const { kv, txns } = fakeTxn(async () => {
      await gate;
      return true;
    });
    const w = new StateWriter(kv, "p/leader", log, clock);
    w.setSession("s-1");
    w.set("p/state/tasks/a", "1");
    w.set("p/state/tasks/b", "1");
    w.set("p/state/tasks/b", "2");
    w.set("p/state/events/a", null);
    release();
    assert.equal(await w.flush(1_000), true);
    const check = { verb: "check-session", key: "p/leader", session: "s-1" };
    // The first write left at once; the three that queued behind it went as one transaction, b=1 superseded.
    assert.deepEqual(txns, [
      [check, { verb: "set", key: "p/state/tasks/a", value: "1" }],
      [check, { verb: "set", key: "p/state/tasks/b", value: "2" }, { verb: "delete", key: "p/state/events/a" }],
    ]);
  });

  it("drops what is pending once Consul refuses the lock check: a deposed leader writes nothing", async () => {
    const clock = fakeClock();
    const { kv, txns } = fakeTxn(async () => false);
    const w = new StateWriter(kv, "p/leader", log, clock);
    w.setSession("s-old");
    w.set("p/state/tasks/a", "stale");
    await w.flush(1_000);
    w.set("p/state/tasks/b", "stale");
    await w.flush(1_000);
    assert.equal(txns.length, 2, "each attempt is one transaction, none retried after a refusal");
  });

  it("retries after a network error until the write lands, and writes nothing without a session", async () => {
    const clock = fakeClock();
    let fails = 2;
    const { kv, txns, sentAt } = fakeTxn(async () => {
      if (fails-- > 0) throw unreachable();
      return true;
    }, clock);
    const w = new StateWriter(kv, "p/leader", log, clock);
    w.set("p/state/tasks/ignored", "x");
    assert.equal(txns.length, 0);
    w.setSession("s-1");
    w.set("p/state/tasks/a", "1");
    const flushed = w.flush(5_000);
    await clock.runUntil(() => txns.length === 3, "the third transaction");
    assert.equal(await flushed, true);
    assert.deepEqual(sentAt, [0, 250, 750], "retried after 250 ms, then 500 ms");
  });

  it("shared mode: writes go in one transaction per lock, and a lost task lock refuses only that task's writes", async () => {
    const clock = fakeClock();
    const { kv, txns } = fakeTxn(async (ops) => ops[0]!.key !== "p/tasks/a/owner");
    const w = new StateWriter(kv, "p/alive/m", log, clock);
    w.setSession("s-1");
    w.set("p/state/events/a", "A1", "p/tasks/a/owner");
    w.set("p/state/events/b", "B1", "p/tasks/b/owner");
    w.set("p/state/tasks/c", "C1");
    assert.equal(await w.flush(1_000), true);
    const fences = txns.map((ops) => [ops[0]!.key, ops.slice(1).map((o) => o.key)]);
    assert.deepEqual(fences, [
      ["p/tasks/a/owner", ["p/state/events/a"]],
      ["p/tasks/b/owner", ["p/state/events/b"]],
      ["p/alive/m", ["p/state/tasks/c"]],
    ]);
  });
});
