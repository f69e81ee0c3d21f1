import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { CtsError } from "../../src/errors/cts-error.ts";
import { checkIdentity } from "../../src/ha/identity.ts";
import type { HaKv } from "../../src/ha/kv.ts";
import { resolveHaSettings } from "../../src/ha/settings.ts";
import { createLogger } from "../../src/log/logger.ts";

const settings = resolveHaSettings({ id: "cts-a", highAvailability: { cluster: { name: "c" } } });
const OURS = "http://127.0.0.1:8558";
const THEIRS = "http://10.0.0.9:8558";

/** HaKv as the check reads it: the sessions by name, and the member record. */
function kv(sessions: Array<{ id: string; node: string; name: string }>, recordAddress?: string): HaKv {
  return {
    sessionsNamed: async (name: string) => sessions.filter((s) => s.name === name),
    get: async (key: string) => ({
      data: recordAddress !== undefined && key === `${settings.membersPrefix}cts-a` ? { key, value: JSON.stringify({ id: "cts-a", address: recordAddress }), modifyIndex: 1n } : undefined,
      index: 1n,
    }),
  } as unknown as HaKv;
}
const live = [{ id: "s1", node: "node-b", name: "cts-ha:c:cts-a" }];

async function check(k: HaKv, answers: boolean) {
  const lines: string[] = [];
  const probed: string[] = [];
  const log = createLogger({ write: (l: string) => void lines.push(l) });
  await checkIdentity(k, settings, OURS, async (url) => (probed.push(url), answers), log);
  return { lines, probed };
}

describe("the identity check of high availability at start (a live session with this id)", () => {
  it("refuses when another instance's session is live and its member record's address answers", async () => {
    await assert.rejects(check(kv(live, THEIRS), true), (e: CtsError) => {
      assert.equal(e.code, "INSTANCE_ID_IN_USE");
      assert.match(e.message, /another cts instance with id 'cts-a' holds a live session in Consul \(cluster 'c', node node-b\) and answers at http:\/\/10\.0\.0\.9:8558/);
      assert.match(e.message, /Set a unique id in the config/);
      return true;
    });
  });

  it("lets the same instance restart: its record names this address (not probed), or nothing answers at the old one", async () => {
    const same = await check(kv(live, `${OURS}/`), true);
    assert.deepEqual(same.probed, []);
    assert.match(same.lines.join(""), /this instance's previous run \(same address/);
    const dead = await check(kv(live, THEIRS), false);
    assert.deepEqual(dead.probed, [THEIRS]);
    assert.match(dead.lines.join(""), /no longer answers at http:\/\/10\.0\.0\.9:8558/);
  });

  it("starts without a live session of its id (sessions of other ids do not count), and warns when no record says where one answers", async () => {
    const none = await check(kv([{ id: "s2", node: "n", name: "cts-ha:c:cts-b" }], THEIRS), true);
    assert.deepEqual([none.probed, none.lines], [[], []]);
    const unknown = await check(kv(live), true);
    assert.match(unknown.lines.join(""), /no member record says where its instance answers/);
  });
});
