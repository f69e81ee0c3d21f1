import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { createLogger } from "../../src/log.ts";
import { CtsError } from "../../src/errors.ts";
import type { HaKv, TxnOp } from "../../src/ha/kv.ts";
import { LeaderSession, type SessionLoss } from "../../src/ha/session.ts";
import { resolveHaSettings } from "../../src/ha/settings.ts";
import { StateWriter } from "../../src/ha/writer.ts";

const log = createLogger({ write: () => {} });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
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
  it("stays alive while renewals succeed", async () => {
    const { kv, calls } = fakeKv(async () => "ok");
    const losses: SessionLoss[] = [];
    const s = await LeaderSession.create(kv, settings, log, (l) => losses.push(l));
    await sleep(1_600);
    assert.deepEqual(losses, []);
    assert.ok(calls.renew >= 2, `renewed ${calls.renew} times`);
    await s.destroy();
    assert.deepEqual(calls.destroyed, ["s-1"]);
  });

  it("fences itself one TTL after the last successful renewal was sent, while renewals keep failing", async () => {
    let ok = true;
    const { kv } = fakeKv(async () => {
      if (ok) return "ok";
      throw unreachable();
    });
    const losses: Array<SessionLoss & { at: number }> = [];
    const s = await LeaderSession.create(kv, settings, log, (l) => losses.push({ ...l, at: Date.now() }));
    await sleep(600); // one successful renewal at ~500 ms
    ok = false;
    const cut = Date.now();
    await sleep(1_200);
    assert.equal(losses.length, 1);
    assert.equal(losses[0]!.kind, "fenced");
    assert.match(losses[0]!.message, /no session renewal succeeded for 1s \(session TTL 1s\)/);
    // The last good renewal was sent ~100 ms before the cut: fencing comes within the TTL of the cut.
    assert.ok(losses[0]!.at - cut <= settings.sessionTtlMs, `fenced ${losses[0]!.at - cut} ms after the cut`);
    assert.equal(s.alive, false);
  });

  it("reports an invalidated session as soon as Consul says it is gone", async () => {
    const { kv } = fakeKv(async () => "gone");
    const losses: SessionLoss[] = [];
    await LeaderSession.create(kv, settings, log, (l) => losses.push(l));
    await sleep(700);
    assert.deepEqual(losses.map((l) => l.kind), ["invalidated"]);
  });
});

/** A fake transaction endpoint: records each transaction, answers per `answer`. */
function fakeTxn(answer: (ops: TxnOp[]) => Promise<boolean>) {
  const txns: TxnOp[][] = [];
  const kv = {
    txn: async (ops: TxnOp[]) => {
      txns.push(ops);
      return answer(ops);
    },
  } as unknown as HaKv;
  return { kv, txns };
}

describe("the state writer", () => {
  it("fences every write with the lock session and keeps only the latest value of a key", async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const { kv, txns } = fakeTxn(async () => {
      await gate;
      return true;
    });
    const w = new StateWriter(kv, "p/leader", log);
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
    const { kv, txns } = fakeTxn(async () => false);
    const w = new StateWriter(kv, "p/leader", log);
    w.setSession("s-old");
    w.set("p/state/tasks/a", "stale");
    await w.flush(1_000);
    w.set("p/state/tasks/b", "stale");
    await w.flush(1_000);
    assert.equal(txns.length, 2, "each attempt is one transaction, none retried after a refusal");
  });

  it("retries after a network error until the write lands, and writes nothing without a session", async () => {
    let fails = 2;
    const { kv, txns } = fakeTxn(async () => {
      if (fails-- > 0) throw unreachable();
      return true;
    });
    const w = new StateWriter(kv, "p/leader", log);
    w.set("p/state/tasks/ignored", "x");
    assert.equal(txns.length, 0);
    w.setSession("s-1");
    w.set("p/state/tasks/a", "1");
    assert.equal(await w.flush(5_000), true);
    assert.equal(txns.length, 3);
  });

  it("shared mode: writes go in one transaction per lock, and a lost task lock refuses only that task's writes", async () => {
    const { kv, txns } = fakeTxn(async (ops) => ops[0]!.key !== "p/tasks/a/owner");
    const w = new StateWriter(kv, "p/alive/m", log);
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
