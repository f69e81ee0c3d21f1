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
});
