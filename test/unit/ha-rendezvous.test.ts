import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { assign, loadOf, memoizedAssign, moved, ownerOf } from "../../src/ha/rendezvous.ts";

const tasks = (n: number) => Array.from({ length: n }, (_, i) => `task-${i}`);
const members = (n: number) => Array.from({ length: n }, (_, i) => `cts-${i}`);

describe("rendezvous assignment", () => {
  it("gives the same owner whatever order the members are listed in", () => {
    for (const t of tasks(200)) assert.equal(ownerOf(t, ["a", "b", "c", "d"]), ownerOf(t, ["d", "b", "a", "c"]));
  });

  it("has no owner without members", () => {
    assert.equal(ownerOf("x", []), undefined);
    assert.equal(assign(["x"], []).size, 0);
  });

  it("spreads 1,000 tasks over 10 members within 25 % of even", () => {
    const load = loadOf(assign(tasks(1000), members(10)), members(10));
    for (const [m, n] of load) assert.ok(n >= 75 && n <= 125, `${m} owns ${n}`);
  });

  it("spreads 24 tasks over 3 members within 50 % of even", () => {
    const load = loadOf(assign(tasks(24), members(3)), members(3));
    for (const [m, n] of load) assert.ok(n >= 4 && n <= 12, `${m} owns ${n}`);
  });

  it("moves only the tasks the joining member takes (about 1/N) when a member joins", () => {
    const before = assign(tasks(1000), members(10));
    const after = assign(tasks(1000), members(11));
    const n = moved(before, after);
    for (const [t, o] of after) if (before.get(t) !== o) assert.equal(o, "cts-10", `${t} moved between old members`);
    assert.ok(n > 1000 / 11 / 2 && n < (1000 / 11) * 1.5, `moved ${n}`);
  });

  it("moves only the leaving member's tasks when a member leaves", () => {
    const before = assign(tasks(1000), members(10));
    const after = assign(tasks(1000), members(10).filter((m) => m !== "cts-3"));
    for (const [t, o] of before) if (o !== "cts-3") assert.equal(after.get(t), o, `${t} moved`);
    assert.equal(moved(before, after), [...before.values()].filter((o) => o === "cts-3").length);
  });

  it("puts a pinned task on its member, and ignores a pin to a member that is not healthy", () => {
    const free = assign(["t"], ["a", "b", "c"]).get("t")!;
    const other = ["a", "b", "c"].find((m) => m !== free)!;
    assert.equal(assign(["t"], ["a", "b", "c"], new Map([["t", other]])).get("t"), other);
    assert.equal(assign(["t"], ["a", "b", "c"], new Map([["t", "gone"]])).get("t"), free);
  });

  it("remembers the last assignment until the tasks, members or pins change", () => {
    const memo = memoizedAssign();
    const first = memo(tasks(10), members(3));
    assert.equal(memo(tasks(10), members(3)), first, "same inputs: the same answer object");
    assert.deepEqual(memo(tasks(10), members(4)), assign(tasks(10), members(4)));
    assert.deepEqual(memo(tasks(10), members(4), new Map([["task-1", "cts-0"]])).get("task-1"), "cts-0");
  });
});
