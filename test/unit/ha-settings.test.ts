import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { hostname } from "node:os";
import { validateConfig } from "../../src/config/load.ts";
import type { CtsConfig } from "../../src/config/types.ts";
import { resolveHaSettings } from "../../src/ha/settings.ts";
import { parseState, stateKeys } from "../../src/state/stored-state.ts";
import { compatProblems } from "../../src/ha/compat.ts";
import type { KvItem } from "../../src/ha/kv.ts";

const repoRoot = fileURLToPath(new URL("../..", import.meta.url));
const item = (key: string, value: unknown): KvItem => ({ key, value: typeof value === "string" ? value : JSON.stringify(value), modifyIndex: 1n });

describe("high-availability settings", () => {
  it("defaults as CTS: id cts-<hostname>, parent path consul-terraform-sync/<cluster>, 15s TTL", () => {
    const s = resolveHaSettings({ highAvailability: { cluster: { name: "prod" } } });
    assert.equal(s.id, `cts-${hostname()}`);
    assert.equal(s.parentPath, "consul-terraform-sync/prod");
    assert.equal(s.lockKey, "consul-terraform-sync/prod/leader");
    assert.equal(s.statePrefix, "consul-terraform-sync/prod/state/");
    assert.equal(s.sessionTtlMs, 15_000);
    assert.equal(s.lockDelayMs, 0);
    assert.equal(s.renewIntervalMs, 7_500);
    assert.equal(s.fenceAfterMs, 15_000, "a leader fences itself after one TTL without renewal");
  });

  it("takes the configured id, path, TTL, lock delay and address", () => {
    const s = resolveHaSettings({
      id: "cts-01",
      highAvailability: { cluster: { name: "c", storage: { parentPath: "/custom/path/", sessionTtl: "3s", lockDelay: "500ms" } }, instance: { address: "http://cts-01:8558" } },
    });
    assert.equal(s.id, "cts-01");
    assert.equal(s.parentPath, "custom/path");
    assert.equal(s.sessionTtlMs, 3_000);
    assert.equal(s.lockDelayMs, 500);
    assert.equal(s.instanceAddress, "http://cts-01:8558");
  });

  it("names every bad field with its fix when the config is loaded", () => {
    const config = {
      id: "has space",
      highAvailability: { cluster: { name: "", storage: { sessionTtl: "fast", parentPath: "a/../b", lockDelay: "2m" } }, instance: { address: " " } },
      tasks: [],
    } as unknown as CtsConfig;
    assert.throws(
      () => validateConfig(config, "/x/cts.config.ts"),
      (e: Error) => {
        for (const want of [
          /id 'has space' is not a valid instance id/,
          /highAvailability\.cluster\.name '' is not a valid cluster name\. Name the cluster/,
          /highAvailability\.cluster\.storage\.sessionTtl 'fast' must be a duration between 1s and 24h/,
          /highAvailability\.cluster\.storage\.parentPath 'a\/\.\.\/b' is not a usable KV prefix/,
          /highAvailability\.cluster\.storage\.lockDelay '2m' must be a duration between 0s and 60s/,
          /highAvailability\.instance\.address ' ' is not an address/,
        ])
          assert.match(e.message, want);
        return true;
      },
    );
  });

  it("shared mode: keys under the parent path, settle defaulting to the session TTL; a bad mode or settle is named", () => {
    const s = resolveHaSettings({ id: "cts-a", highAvailability: { cluster: { name: "c", mode: "shared", storage: { sessionTtl: "5s" } } } });
    assert.equal(s.mode, "shared");
    assert.equal(s.settleMs, 5_000);
    assert.equal(s.tasksPrefix, "consul-terraform-sync/c/tasks/");
    assert.equal(s.alivePrefix, "consul-terraform-sync/c/alive/");
    assert.equal(resolveHaSettings({ highAvailability: { cluster: { name: "c" } } }).mode, "leader");
    const bad = { highAvailability: { cluster: { name: "c", mode: "spread", settle: "soon" } }, tasks: [] } as unknown as CtsConfig;
    assert.throws(
      () => validateConfig(bad, "/x/cts.config.ts"),
      (e: Error) => /highAvailability\.cluster\.mode 'spread' is not a cluster mode\. Use "leader"/.test(e.message) && /highAvailability\.cluster\.settle 'soon' must be a duration/.test(e.message),
    );
  });

  it("leaves configs without high availability alone (any id)", () => {
    assert.doesNotThrow(() => validateConfig({ id: "any id at all", tasks: [] } as CtsConfig, "/x/cts.config.ts"));
  });
});

describe("stored state", () => {
  const p = "cts/c/state/";
  it("reads tasks and events and reports entries it cannot use", () => {
    const state = parseState(p, [
      item(stateKeys.task(p, "web"), { name: "web", origin: "config", enabled: false }),
      item(stateKeys.task(p, "gone"), { name: "gone", origin: "config", enabled: false, deleted: true }),
      item(stateKeys.task(p, "api"), { name: "api", origin: "api", enabled: true, spec: { name: "api", module: "./m" } }),
      item(stateKeys.task(p, "nospec"), { name: "nospec", origin: "api", enabled: true }),
      item(stateKeys.task(p, "wrong"), { name: "other", origin: "api", enabled: true }),
      item(stateKeys.events(p, "web"), [{ id: "1", task_name: "web", success: true }, { id: "2", task_name: "intruder", success: true }]),
      item(`${p}events/bad`, "{not json"),
    ]);
    assert.deepEqual([...state.tasks.keys()].sort(), ["api", "gone", "web"]);
    assert.deepEqual(state.events.get("web")!.map((e) => e.id), ["1"]);
    assert.equal(state.problems.length, 3);
    assert.ok(state.problems.some((m) => /nospec.*without its spec/.test(m)));
  });

  it("reads what each task applied last (the new leader's no-op skip) and sets aside records it cannot use", () => {
    const state = parseState(p, [
      item(stateKeys.applied(p, "web"), { key: "abc+def", count: 2, updated_at: "2026-01-01T00:00:00Z" }),
      item(stateKeys.applied(p, "nocount"), { key: "abc" }),
      item(stateKeys.applied(p, "underway"), { count: 1 }),
      item(stateKeys.applied(p, "badcount"), { key: "abc", count: -1 }),
      item(stateKeys.applied(p, "empty"), { updated_at: "2026-01-01T00:00:00Z" }),
      item(stateKeys.applied(p, "emptykey"), { key: "", count: 1 }),
    ]);
    assert.deepEqual(
      Object.fromEntries(state.applied),
      { web: { key: "abc+def", count: 2 }, nocount: { key: "abc" }, underway: { count: 1 } },
      "a record without a key is an apply that was under way: only its count is kept",
    );
    assert.equal(state.problems.length, 3);
    assert.ok(state.problems.every((m) => /not an applied record/.test(m)));
  });
});

describe("compatibility check", () => {
  it("passes when every local module exists and the leader's tasks are all here", async () => {
    const problems = await compatProblems({
      configDir: repoRoot,
      ownTasks: [{ name: "fw", class: "ModuleTask", module: "./modules/allow-list" }, { name: "m", class: "MemberList" }],
      apiTasks: [{ name: "reg", class: "ModuleTask", module: "hashicorp/x/y" }],
      leader: { id: "cts-01", tasks: [{ name: "m", class: "MemberList" }] },
    });
    assert.deepEqual(problems, []);
  });

  it("names a missing local module as CTS does, and tasks of the leader this config lacks", async () => {
    const problems = await compatProblems({
      configDir: repoRoot,
      ownTasks: [{ name: "m", class: "Other" }],
      apiTasks: [{ name: "api-1", class: "ModuleTask", module: "./modules/not-here" }],
      leader: { id: "cts-01", tasks: [{ name: "m", class: "MemberList" }, { name: "lb", class: "Upstream" }] },
    });
    assert.equal(problems.length, 3);
    assert.match(problems[0]!, /^stat \.\/modules\/not-here: no such file or directory \(module of task 'api-1'/);
    assert.match(problems[1]!, /task 'm' is class MemberList on leader 'cts-01' but class Other here/);
    assert.match(problems[2]!, /task 'lb' \(class Upstream\) is in the config of leader 'cts-01' but not in this instance's config/);
  });
});
