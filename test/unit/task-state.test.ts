import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CtsError } from "../../src/errors/cts-error.ts";
import { APPLIED_FILE, FileTaskState, HOLD_FILE, keptAppliedKey, STATE_FOLDER } from "../../src/state/file-state.ts";
import { KvTaskState, type KvAccess } from "../../src/state/kv-state.ts";
import type { HeldPlan } from "../../src/state/records.ts";
import { folderError } from "../../src/driver/safe-files.ts";
import { parseState } from "../../src/state/stored-state.ts";

function scratch(): { root: string; done(): void } {
  const root = mkdtempSync(join(tmpdir(), "cts-state-"));
  return { root, done: () => rmSync(root, { recursive: true, force: true }) };
}

const held = (task: string): HeldPlan => ({
  task,
  hash: "h1",
  ref: "plan-1",
  digest: "d1",
  reasons: ["destroys 2 resources"],
  why: "guards",
  summary: { add: 0, change: 0, destroy: 2 },
  resources: [],
  heldAt: "2026-01-01T00:00:00.000Z",
});

function assertRefusedLink(fn: () => unknown, link: string): void {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof CtsError);
    assert.equal(err.code, "WORKING_DIR_UNUSABLE");
    assert.ok(err.message.includes(link), `names the link: ${err.message}`);
    assert.match(err.message, /symbolic link/);
    return true;
  });
}

describe("a single instance's task state: one folder per task under <working dir>/.cts-state", () => {
  it("keeps the applied key and count in the task's own state folder, not in the driver's working dir", async () => {
    const s = scratch();
    try {
      const state = new FileTaskState(s.root, (t) => join(s.root, t));
      state.recordApplied("web", { key: "k1", count: 3 });
      const file = join(s.root, STATE_FOLDER, "web", APPLIED_FILE);
      assert.deepEqual(JSON.parse(readFileSync(file, "utf8")), { key: "k1", count: 3 });
      assert.equal(existsSync(join(s.root, "web")), false, "nothing written into the task's working dir");
      assert.equal(keptAppliedKey(s.root, "web"), "k1", "cts synth reads it");
      await state.voidApplied("web", 2);
      assert.deepEqual(JSON.parse(readFileSync(file, "utf8")), { count: 2 }, "a void keeps the count about to be applied, without a key");
      await state.voidApplied("web");
      assert.equal(existsSync(file), false);
    } finally {
      s.done();
    }
  });

  it("a new process takes back the count and the hold, not the key: it applies every task once, as CTS does", () => {
    const s = scratch();
    try {
      const first = new FileTaskState(s.root);
      first.recordApplied("web", { key: "k1", count: 3 });
      first.setHold("web", { held: held("web") });
      const next = new FileTaskState(s.root);
      assert.deepEqual(next.applied("web"), { count: 3 });
      assert.equal(next.hold("web").held?.digest, "d1");
      next.setHold("web", undefined);
      assert.equal(existsSync(join(s.root, STATE_FOLDER, "web", HOLD_FILE)), false);
    } finally {
      s.done();
    }
  });

  it("takes over the files an older version kept in the task's working dir once, and removes them", () => {
    const s = scratch();
    try {
      const old = join(s.root, "web");
      mkdirSync(old);
      writeFileSync(join(old, ".cts-applied-hash"), "k0\n");
      writeFileSync(join(old, ".cts-applied-count"), JSON.stringify({ count: 4 }));
      writeFileSync(join(old, ".cts-hold.json"), JSON.stringify({ held: held("web") }));
      const state = new FileTaskState(s.root, (t) => join(s.root, t));
      assert.deepEqual(state.applied("web"), { count: 4 });
      assert.equal(state.hold("web").held?.hash, "h1");
      assert.deepEqual(JSON.parse(readFileSync(join(s.root, STATE_FOLDER, "web", APPLIED_FILE), "utf8")), { key: "k0", count: 4 });
      for (const f of [".cts-applied-hash", ".cts-applied-count", ".cts-hold.json"]) assert.equal(existsSync(join(old, f)), false, `${f} removed`);
    } finally {
      s.done();
    }
  });

  it("never writes through a link planted where it keeps a file, and names the link", async () => {
    const s = scratch();
    try {
      const outside = join(s.root, "outside.txt");
      writeFileSync(outside, "precious\n");
      const dir = join(s.root, STATE_FOLDER, "web");
      mkdirSync(dir, { recursive: true });
      const link = join(dir, APPLIED_FILE);
      symlinkSync(outside, link);
      const state = new FileTaskState(s.root);
      await assert.rejects(state.voidApplied("web", 2), (err: unknown) => err instanceof CtsError && err.code === "WORKING_DIR_UNUSABLE" && err.message.includes(link));
      assert.equal(readFileSync(outside, "utf8"), "precious\n", "the file the link points at is untouched");
      assert.equal(lstatSync(link).isSymbolicLink(), true);
    } finally {
      s.done();
    }
  });

  it("refuses a task's state folder that is a link, before writing anything into it", async () => {
    const s = scratch();
    try {
      const elsewhere = join(s.root, "elsewhere");
      mkdirSync(elsewhere);
      mkdirSync(join(s.root, STATE_FOLDER));
      const link = join(s.root, STATE_FOLDER, "web");
      symlinkSync(elsewhere, link);
      const problems: CtsError[] = [];
      const state = new FileTaskState(s.root, undefined, (err) => problems.push(err));
      state.setHold("web", { held: held("web") });
      assertRefusedLink(() => {
        throw problems[0];
      }, link);
      assert.equal(state.hold("web").held?.hash, "h1", "the hold is kept in memory all the same");
      await assert.rejects(state.voidApplied("web", 1), /symbolic link/);
      assert.deepEqual(readdirSync(elsewhere), [], "nothing written through the linked folder");
    } finally {
      s.done();
    }
  });

  it("names the folder, the cause and the fix when the filesystem refuses a write", () => {
    const enospc = Object.assign(new Error("ENOSPC: no space left on device, write"), { code: "ENOSPC" });
    const erofs = Object.assign(new Error("EROFS: read-only file system, unlink '/w/.cts-state/web/applied.json'"), { code: "EROFS" });
    const full = folderError("write", "/w/.cts-state/web/applied.json", enospc, "web");
    assert.equal(full.code, "WORKING_DIR_UNUSABLE");
    assert.equal(full.task, "web");
    assert.match(full.message, /free space on the filesystem that holds \/w\/\.cts-state\/web/);
    assert.match(folderError("remove", "/w/.cts-state/web/applied.json", erofs).message, /read-only mount: mount it read-write/);
  });
});

describe("a cluster's task state: Consul KV under the state prefix, every write fenced", () => {
  function cluster(access: KvAccess, flushes = true) {
    const kv = new Map<string, string>();
    const writes: Array<{ key: string; fence: string | undefined }> = [];
    let flushed = 0;
    const state = new KvTaskState(
      {
        set(key, value, fence) {
          writes.push({ key, fence });
          if (value === null) kv.delete(key);
          else kv.set(key, value);
        },
        async flush() {
          flushed++;
          return flushes;
        },
      },
      "cts/state/",
      access,
    );
    return { state, kv, writes, flushed: () => flushed, stored: () => parseState("cts/state/", [...kv].map(([key, value]) => ({ key, value }))) };
  }

  it("a follower writes nothing, and refuses a run's void (its run must not go on)", async () => {
    const c = cluster({ fence: () => null });
    c.state.recordApplied("web", { key: "k", count: 1 });
    c.state.setHold("web", { held: held("web") });
    c.state.recordEvents("web", []);
    c.state.recordTask({ kind: "enabled", task: "web", origin: "config" }, { name: "web", origin: "config", enabled: true });
    assert.deepEqual(c.writes, []);
    assert.equal(c.state.hold("web").held?.digest, "d1", "kept in memory all the same");
    await assert.rejects(c.state.voidApplied("web", 2), /stopped leading/);
  });

  it("the leader's void waits until Consul has it, and only when a record is stored there", async () => {
    const c = cluster({ fence: () => undefined });
    await c.state.voidApplied("web");
    assert.equal(c.flushed(), 0, "nothing stored, nothing to clear: Terraform starts at once");
    await c.state.voidApplied("web", 2);
    assert.equal(c.flushed(), 1);
    assert.deepEqual(c.stored().applied.get("web"), { count: 2 });
    c.state.recordApplied("web", { key: "k", count: 2 });
    assert.deepEqual(c.stored().applied.get("web"), { key: "k", count: 2 });
    const failing = cluster({ fence: () => undefined }, false);
    await assert.rejects(failing.state.voidApplied("web", 1), /did not succeed within 5 s/);
  });

  it("shared mode: a run's writes are fenced with the owner lock; a task record of a task owned elsewhere with the member's liveness lock", () => {
    const mine = new Set(["web"]);
    let changed = 0;
    const c = cluster({
      fence: (task, what) => (mine.has(task) ? `owner/${task}` : what === "task" ? "alive/me" : null),
      tasksChanged: () => void changed++,
    });
    c.state.recordEvents("web", []);
    c.state.recordEvents("db", []);
    c.state.recordTask({ kind: "created", task: "api", origin: "api" }, { name: "api", origin: "api", enabled: true });
    assert.deepEqual(
      c.writes.map((w) => `${w.key}@${w.fence}`),
      ["cts/state/events/web@owner/web", "cts/state/tasks/api@alive/me"],
    );
    assert.equal(changed, 1, "a created task makes the cluster assign tasks again");
  });

  it("a new leader takes what the previous one applied and the holds, writing nothing", () => {
    const c = cluster({ fence: () => undefined });
    c.state.recordApplied("stale", { key: "mine", count: 1 });
    const before = c.writes.length;
    c.state.restore(
      {
        tasks: new Map(),
        events: new Map(),
        holds: new Map([["web", { held: held("web") }]]),
        applied: new Map([["web", { key: "theirs", count: 5 }]]),
        problems: [],
      },
      { applied: true },
    );
    assert.equal(c.writes.length, before);
    assert.deepEqual(c.state.applied("web"), { key: "theirs", count: 5 });
    assert.equal(c.state.applied("stale"), undefined, "what this instance knew is replaced: another may have applied since");
    assert.equal(c.state.hold("web").held?.hash, "h1");
  });
});
