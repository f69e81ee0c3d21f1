import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { workerSynthesizer } from "../../src/synth/synthesizer.ts";
import type { TaskRef } from "../../src/synth/task-ref.ts";
import { services } from "../../src/task/conditions.ts";
import { fakeClock } from "../support/fake-clock.ts";
import { settled } from "../support/waits.ts";

const MODULES = fileURLToPath(new URL("../../modules", import.meta.url));
const CONFIG = fileURLToPath(new URL("../fixtures/configs/valid.ts", import.meta.url));
const moduleRef: TaskRef = { kind: "module", spec: { name: "echo", module: "./cts-echo", condition: services({ names: ["web"] }) } as never };
const classRef: TaskRef = { kind: "config", configFile: CONFIG, name: "members" };
const input = { services: [] } as never;

describe("the synthesis worker", () => {
  it("builds module tasks on the calling thread: they never start the worker", async () => {
    const synth = workerSynthesizer({ idleMs: 200 });
    try {
      const result = await synth.synth(moduleRef, input, { configDir: MODULES });
      assert.ok(result.json.includes("cts-echo"));
      assert.equal(synth.running(), false);
    } finally {
      await synth.close();
    }
  });

  it("starts on the first task class to synthesize and ends after the idle period, then starts again when needed", async () => {
    const clock = fakeClock();
    const synth = workerSynthesizer({ idleMs: 200, clock });
    try {
      assert.equal(synth.running(), false, "no worker before any synthesis");
      const first = await synth.synth(classRef, input, {});
      assert.ok(first.json.includes("local_file"));
      assert.equal(synth.running(), true);
      await settled();
      assert.equal(clock.pending(), 1, "the idle period started");
      clock.advance(199);
      assert.equal(synth.running(), true, "still there before the idle period is over");
      clock.advance(1);
      assert.equal(synth.running(), false, "ended after the idle period");
      const again = await synth.synth(classRef, input, {});
      assert.equal(again.hash, first.hash, "the same task and input synthesize the same JSON in a new worker");
    } finally {
      await synth.close();
    }
  });

  it("starts its worker when a task class is about to run (prewarm), and the run finds it ready", async () => {
    const synth = workerSynthesizer({ idleMs: 60_000, clock: fakeClock() });
    try {
      synth.prewarm(moduleRef);
      assert.equal(synth.running(), false, "a module task never needs the worker");
      synth.prewarm(classRef);
      assert.equal(synth.running(), true, "the worker starts at once, before the run");
      synth.prewarm(classRef);
      const result = await synth.synth(classRef, input, {});
      assert.ok(result.json.includes("local_file"));
      assert.equal(synth.stats().started, 1, "one worker served the warm-up and the synthesis");
      assert.ok(synth.stats().startMs! > 0, "the warm-up is counted as the worker's start");
    } finally {
      await synth.close();
    }
  });

  it("stays warm when told to: no idle period runs until it is let go again", async () => {
    const clock = fakeClock();
    const synth = workerSynthesizer({ idleMs: 200, clock });
    try {
      synth.keepWarm(true);
      await synth.synth(classRef, input, {});
      await settled();
      assert.equal(clock.pending(), 0, "no idle period while kept warm");
      synth.keepWarm(false);
      assert.equal(clock.pending(), 1, "the idle period starts once it is let go");
      clock.advance(200);
      assert.equal(synth.running(), false);
    } finally {
      await synth.close();
    }
  });

  it("recycles against the worker's own heap baseline after its first synthesis, not a fixed size", async () => {
    const synth = workerSynthesizer({ idleMs: 60_000, clock: fakeClock(), maxHeapGrowthBytes: 1 });
    try {
      await synth.synth(classRef, input, {});
      const first = synth.stats();
      assert.ok(first.baselineHeap! > 0, "the first synthesis sets the baseline");
      assert.equal(first.recycled, 0, "however big the heap after loading, the first synthesis never recycles");
      let n = 0;
      while (synth.recycled() === 0 && n++ < 5) await synth.synth(classRef, { services: Array.from({ length: 4000 }, (_, i) => ({ id: `w${i}`, name: "web", address: `10.1.${i >> 8}.${i & 255}`, port: 80, meta: { pad: "x".repeat(2000) }, tags: [] })) } as never, {});
      assert.equal(synth.recycled(), 1, "retired once its heap grew past the baseline");
      const again = await synth.synth(classRef, input, {});
      assert.ok(again.json.includes("local_file"), "a new worker answers after the old one is retired");
      assert.ok(synth.stats().started >= 1);
    } finally {
      await synth.close();
    }
  });
});

