import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { approvalProblems, effectiveGuards, guardProblems, guardViolations, planCounts, runPredicate, type PlanJson, type PlanResourceChange } from "../../src/task/guards.ts";
import { taskProblems } from "../../src/task/validate.ts";
import { ModuleTask } from "../../src/task/module-task.ts";
import { services } from "../../src/task/conditions.ts";
import { declareTask } from "../../src/task/declaration.ts";
import { Holds, planDigest, type HeldPlan } from "../../src/runtime/holds.ts";
import { parseState, stateKeys } from "../../src/state/stored-state.ts";
import { FileTaskState } from "../../src/state/file-state.ts";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** One resource change as `tofu show -json` writes it. */
const rc = (address: string, actions: string[], extra: Partial<PlanResourceChange> = {}): PlanResourceChange => ({
  address,
  type: address.split(".").at(-2)!.replace(/\[.*$/, ""),
  mode: "managed",
  change: { actions },
  ...extra,
});

/** A pool of `n` local_file instances `module.web.local_file.pool[i]`, each with the given actions, and one other resource kept. */
function pool(actions: string[][]): PlanJson {
  return {
    format_version: "1.2",
    resource_changes: [...actions.map((a, i) => rc(`module.web.local_file.pool[${i}]`, a)), rc("module.web.null_resource.keep", ["no-op"])],
  };
}

describe("plan guards: counts", () => {
  it("counts what the state held and what the plan destroys (replacements count, creations do not exist yet, data sources are left out)", () => {
    const plan: PlanJson = {
      resource_changes: [
        rc("local_file.a", ["delete"]),
        rc("local_file.b", ["delete", "create"]),
        rc("local_file.c", ["create"]),
        rc("local_file.d", ["no-op"]),
        rc("local_file.e", ["update"]),
        { address: "data.local_file.x", type: "local_file", mode: "data", change: { actions: ["read"] } },
        rc("local_file.b", ["delete"], { deposed: "abcd" }),
      ],
    };
    assert.deepEqual(planCounts(plan), { existing: 4, destroy: 2 });
  });

  it("reads a plan without resource_changes (nothing to apply) as zero", () => {
    assert.deepEqual(planCounts({}), { existing: 0, destroy: 0 });
    assert.deepEqual(guardViolations({}, { maxDestroy: 0, maxDestroyPercent: 0, neverEmpty: ["local_file"] }), []);
  });
});

describe("plan guards: violations", () => {
  it("holds a plan that destroys more than maxDestroy, and lets one at the limit through", () => {
    const three = pool([["delete"], ["delete"], ["delete"], ["no-op"]]);
    assert.deepEqual(guardViolations(three, { maxDestroy: 3 }), []);
    assert.deepEqual(guardViolations(three, { maxDestroy: 2 }), ["the plan destroys 3 resources, more than maxDestroy (2)"]);
  });

  it("holds a plan that destroys more than maxDestroyPercent of what the state holds", () => {
    // 5 existing (4 pool + keep), 2 destroyed = 40 %.
    const plan = pool([["delete"], ["delete"], ["no-op"], ["update"]]);
    assert.deepEqual(guardViolations(plan, { maxDestroyPercent: 40 }), []);
    assert.deepEqual(guardViolations(plan, { maxDestroyPercent: 39.5 }), ["the plan destroys 2 of 5 resources (40 %), more than maxDestroyPercent (39.5 %)"]);
    // Nothing exists yet: a first apply never trips the percentage.
    assert.deepEqual(guardViolations({ resource_changes: [rc("local_file.a", ["create"])] }, { maxDestroyPercent: 0 }), []);
  });

  it("holds a plan that empties a named resource type or address, not one that keeps one instance", () => {
    const emptied = pool([["delete"], ["delete"]]);
    assert.deepEqual(guardViolations(emptied, { neverEmpty: ["local_file"] }), ["the plan leaves local_file empty (2 instances now, none after; neverEmpty)"]);
    assert.deepEqual(guardViolations(emptied, { neverEmpty: ["module.web.local_file.pool"] }), ["the plan leaves module.web.local_file.pool empty (2 instances now, none after; neverEmpty)"]);
    // The module as a whole keeps null_resource.keep.
    assert.deepEqual(guardViolations(emptied, { neverEmpty: ["module.web"] }), []);
    assert.deepEqual(guardViolations(pool([["delete"], ["no-op"]]), { neverEmpty: ["local_file", "module.web.local_file.pool"] }), []);
    // A replacement leaves an instance; a prefix stops at '.' or '[' (module.we does not name module.web).
    assert.deepEqual(guardViolations(pool([["delete", "create"], ["delete"]]), { neverEmpty: ["local_file"] }), []);
    assert.deepEqual(guardViolations(emptied, { neverEmpty: ["module.we"] }), []);
    // Empty before and after is not the plan's doing.
    assert.deepEqual(guardViolations({ resource_changes: [] }, { neverEmpty: ["local_file"] }), []);
  });

  it("lists every guard a plan breaks", () => {
    const plan = pool([["delete"], ["delete"], ["delete"]]);
    assert.equal(guardViolations(plan, { maxDestroy: 1, maxDestroyPercent: 10, neverEmpty: ["local_file"] }).length, 3);
  });
});

describe("plan guards: the predicate", () => {
  const plan = pool([["delete"]]);

  it("holds with the reason the predicate returns, and lets the plan through on undefined, null, false or ''", () => {
    assert.equal(runPredicate((p) => (p.resource_changes!.some((c) => c.change.actions.includes("delete")) ? "no deletes on Fridays" : undefined), plan), "guards.check: no deletes on Fridays");
    for (const none of [undefined, null, false, ""] as const) assert.equal(runPredicate(() => none, plan), undefined);
  });

  it("holds, naming the error, when the predicate throws or returns something else than a reason", () => {
    assert.match(runPredicate(() => { throw new Error("boom"); }, plan)!, /^guards\.check threw: boom; held to be safe$/);
    assert.match(runPredicate((() => 42) as never, plan)!, /returned number, not a reason string/);
  });
});

describe("plan guards: declarations", () => {
  it("accepts the documented forms", () => {
    assert.deepEqual(guardProblems({ maxDestroy: 0, maxDestroyPercent: 12.5, neverEmpty: ["local_file", "module.web"], check: () => undefined }, "guards"), []);
    assert.deepEqual(guardProblems(false, "guards"), []);
    assert.deepEqual(approvalProblems("always", "approval"), []);
    assert.deepEqual(approvalProblems(undefined, "approval"), []);
  });

  it("refuses bad declarations, each with its field and the fix", () => {
    const fields = (g: unknown) => guardProblems(g, "guards").map((p) => `${p.field}: ${p.message}`);
    assert.deepEqual(fields({ maxDestroy: -1 }), ["guards.maxDestroy: must be a whole number ≥ 0 (got -1)."]);
    assert.deepEqual(fields({ maxDestroy: 1.5 }), ["guards.maxDestroy: must be a whole number ≥ 0 (got 1.5)."]);
    assert.deepEqual(fields({ maxDestroyPercent: 101 }), ["guards.maxDestroyPercent: must be a number from 0 to 100 (got 101)."]);
    assert.deepEqual(fields({ neverEmpty: "local_file" }), ['guards.neverEmpty: must be a list of resource types or addresses, e.g. ["local_file", "module.web.consul_service.pool"].']);
    assert.deepEqual(fields({ neverEmpty: ["ok", "", "a b"] }), [
      'guards.neverEmpty[1]: must be a resource type or address without spaces (got "").',
      'guards.neverEmpty[2]: must be a resource type or address without spaces (got "a b").',
    ]);
    assert.deepEqual(fields({ check: "plan.destroy > 0" }), ["guards.check: must be a function (plan) => reason | undefined."]);
    assert.deepEqual(fields({ maxDestory: 1 }), ["guards.maxDestory: is not a guard. Use maxDestroy, maxDestroyPercent, neverEmpty or check."]);
    assert.match(fields(3)[0]!, /^guards: must be an object like/);
    assert.match(approvalProblems("sometimes", "approval")[0]!.message, /must be "always" .* or "guards"/);
  });

  it("checks a task's guards and approval with its other options", () => {
    const task = new ModuleTask({ name: "web", module: "./m", condition: services({ names: ["web"] }), guards: { maxDestroy: -2 }, approval: "never" as never });
    assert.deepEqual(
      taskProblems(task).map((p) => p.field),
      ["guards.maxDestroy", "approval"],
    );
  });

  it("sends a task class's predicate across threads as a flag", () => {
    const task = new ModuleTask({ name: "web", module: "./m", condition: services({ names: ["web"] }), guards: { maxDestroy: 1, check: () => undefined }, approval: "always" });
    const d = declareTask(task);
    assert.equal(d.kind, "module");
    assert.deepEqual(d.kind === "module" ? [d.spec.guards, d.spec.approval] : [], [{ maxDestroy: 1, check: true }, "always"]);
    assert.doesNotThrow(() => structuredClone(d));
  });

  it("takes the task's guards over the config's; false turns them off", () => {
    assert.deepEqual(effectiveGuards({ maxDestroy: 5 }, undefined), { maxDestroy: 5 });
    assert.deepEqual(effectiveGuards({ maxDestroy: 5 }, { neverEmpty: ["x"] }), { neverEmpty: ["x"] });
    assert.equal(effectiveGuards({ maxDestroy: 5 }, false), undefined);
    assert.equal(effectiveGuards(undefined, {}), undefined);
  });
});

describe("plan digest", () => {
  it("is the same for plans making the same changes in any order, and differs when a change differs", () => {
    const a = pool([["delete"], ["no-op"]]);
    const b = { ...a, resource_changes: [...a.resource_changes!].reverse(), timestamp: "later" };
    assert.equal(planDigest(a), planDigest(b));
    assert.notEqual(planDigest(a), planDigest(pool([["delete"], ["delete"]])));
  });
});

describe("held plans: where they are kept", () => {
  const hold = (task: string): HeldPlan => ({
    task,
    hash: "h1",
    ref: ".cts-kept-0123456789abcdef.tfplan",
    digest: "d1",
    reasons: ["the plan destroys 2 resources, more than maxDestroy (0)"],
    why: "guards",
    summary: { add: 0, change: 0, destroy: 2 },
    resources: [{ address: "local_file.a", action: "delete" }],
    heldAt: "2026-01-01T00:00:00.000Z",
  });

  it("survives a restart in the task's state folder, and forgets a cleared hold", async () => {
    const dir = await mkdtemp(join(tmpdir(), "cts-holds-"));
    try {
      const first = new Holds(new FileTaskState(dir));
      first.hold(hold("web"));
      assert.equal(first.approve("web")?.approvedAt !== undefined, true);
      const second = new Holds(new FileTaskState(dir));
      assert.equal(second.held("web")?.digest, "d1", "read back from the folder");
      assert.ok(second.held("web")?.approvedAt);
      first.reject("web");
      assert.equal(new Holds(new FileTaskState(dir)).get("web").rejected?.hash, "h1");
      first.clear("web");
      assert.deepEqual(new Holds(new FileTaskState(dir)).get("web"), {});
      assert.equal(first.approve("web"), undefined, "nothing held, nothing approved");
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("is stored in Consul KV under holds/<task> and read back only when it is a hold of that task", () => {
    const prefix = "cts/state/";
    const state = parseState(prefix, [
      { key: stateKeys.hold(prefix, "web"), value: JSON.stringify({ held: hold("web") }) },
      { key: stateKeys.hold(prefix, "api"), value: JSON.stringify({ held: hold("web") }) },
      { key: stateKeys.hold(prefix, "db"), value: JSON.stringify({ rejected: { task: "db", hash: "h", rejectedAt: "x" } }) },
      { key: stateKeys.hold(prefix, "bad"), value: "[]" },
    ] as never);
    assert.deepEqual([...state.holds.keys()].sort(), ["db", "web"]);
    assert.equal(state.problems.length, 2, state.problems.join("\n"));
    assert.ok(state.problems.every((p) => /not a held plan of this task/.test(p)));
  });
});
