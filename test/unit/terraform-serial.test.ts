import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { createKeyedSerializer } from "../../src/terraform/serial.ts";

const tick = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("per-task serialization", () => {
  it("runs two jobs of one task one after the other, even when the first fails", async () => {
    const s = createKeyedSerializer();
    const events: string[] = [];
    const a = s.run("web", async () => {
      events.push("a-start");
      await tick(20);
      events.push("a-end");
      throw new Error("boom");
    });
    const b = s.run("web", async () => {
      events.push("b-start");
      return 2;
    });
    await assert.rejects(a, /boom/);
    assert.equal(await b, 2);
    assert.deepEqual(events, ["a-start", "a-end", "b-start"]);
    await tick(0);
    assert.deepEqual(s.busyKeys(), []);
  });

  it("runs jobs of different tasks in parallel", async () => {
    const s = createKeyedSerializer();
    let running = 0;
    let peak = 0;
    const job = async () => {
      peak = Math.max(peak, ++running);
      await tick(20);
      running--;
    };
    await Promise.all([s.run("a", job), s.run("b", job)]);
    assert.equal(peak, 2);
  });
});
