import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { createKeyedSerializer } from "../../src/driver/serial.ts";
import { counter, deferred, settled } from "../support/waits.ts";

describe("per-task serialization", () => {
  it("runs two jobs of one task one after the other, even when the first fails", async () => {
    const s = createKeyedSerializer();
    const events: string[] = [];
    const failA = deferred();
    const a = s.run("web", async () => {
      events.push("a-start");
      await failA.promise;
      events.push("a-end");
      throw new Error("boom");
    });
    const b = s.run("web", async () => {
      events.push("b-start");
      return 2;
    });
    await settled();
    assert.deepEqual(events, ["a-start"], "b waits while a runs");
    assert.deepEqual(s.busyKeys(), ["web"]);
    failA.resolve();
    await assert.rejects(a, /boom/);
    assert.equal(await b, 2);
    assert.deepEqual(events, ["a-start", "a-end", "b-start"]);
    // The key is let go in a callback after b's result: once queued callbacks ran, it is free.
    await settled();
    assert.deepEqual(s.busyKeys(), []);
  });

  it("runs jobs of different tasks in parallel", async () => {
    const s = createKeyedSerializer();
    const started = counter();
    const release = deferred();
    const job = async () => {
      started.add();
      await release.promise;
    };
    const both = Promise.all([s.run("a", job), s.run("b", job)]);
    // Neither job can end before both began: only side by side do they get here.
    await started.reached(2);
    assert.deepEqual(s.busyKeys().sort(), ["a", "b"]);
    release.resolve();
    await both;
  });
});
