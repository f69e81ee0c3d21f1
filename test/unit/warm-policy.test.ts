import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { keepsSynthesizerWarm, WORKER_START_BUDGET_MS } from "../../src/runtime/warm-policy.ts";

const cls = { kind: "config" as const, configFile: "/c/cts.config.ts", name: "pool" };
const mod = { kind: "module" as const, spec: {} as never };
const on = (min: number) => ({ enabled: true, min, max: 4 * min });
const off = { enabled: false, min: 0, max: 0 };

describe("keeping the synthesis worker warm", () => {
  it("keeps it warm when a task class runs without a buffer period: a change must not wait for a worker start", () => {
    assert.equal(keepsSynthesizerWarm([{ ref: cls, buffer: off }]), true);
  });
  it("keeps it warm when a task class's buffer period is shorter than a worker start", () => {
    assert.equal(keepsSynthesizerWarm([{ ref: cls, buffer: on(WORKER_START_BUDGET_MS - 1) }]), true);
  });
  it("lets it end when every task class's buffer period hides a start (CTS's default 5s)", () => {
    assert.equal(keepsSynthesizerWarm([{ ref: cls, buffer: on(5_000) }, { ref: mod, buffer: off }]), false);
  });
  it("never keeps it for module tasks, which are built without the worker", () => {
    assert.equal(keepsSynthesizerWarm([{ ref: mod, buffer: off }, { ref: { ...cls, module: {} as never }, buffer: off }]), false);
  });
});
