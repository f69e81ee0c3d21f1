import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { CtsError } from "../../src/errors/cts-error.ts";
import { Duration } from "../../src/time/duration.ts";
import { BufferPeriod, normalizeBufferPeriod } from "../../src/watch/buffer.ts";
import { fakeClock } from "../support/fake-clock.ts";

const parseDuration = (value: number | string, field: string) => Duration.parse(value, field).ms;

describe("BufferPeriod (quiescence timer)", () => {
  it("fires min after a single trigger", () => {
    const clock = fakeClock();
    let fired = 0;
    const b = new BufferPeriod({ min: 5_000, max: 20_000 }, () => fired++, clock);
    b.trigger();
    clock.advance(4_999);
    assert.equal(fired, 0);
    clock.advance(1);
    assert.equal(fired, 1);
    assert.equal(b.pending, false);
  });

  it("restarts the min timer on each trigger", () => {
    const clock = fakeClock();
    let fired = 0;
    const b = new BufferPeriod({ min: 5_000, max: 20_000 }, () => fired++, clock);
    b.trigger();
    clock.advance(4_000);
    b.trigger();
    clock.advance(4_000);
    assert.equal(fired, 0);
    clock.advance(1_000);
    assert.equal(fired, 1);
  });

  it("never waits past the deadline fixed by the first trigger (now + max)", () => {
    const clock = fakeClock();
    const firedAt: number[] = [];
    const b = new BufferPeriod({ min: 5_000, max: 20_000 }, () => firedAt.push(clock.now()), clock);
    b.trigger();
    for (let t = 0; t < 30; t++) {
      clock.advance(3_000);
      if (firedAt.length === 0) b.trigger();
    }
    assert.deepEqual(firedAt, [20_000]);
  });

  it("fires once per period and starts a fresh period on the next trigger", () => {
    const clock = fakeClock();
    const firedAt: number[] = [];
    const b = new BufferPeriod({ min: 1_000, max: 2_000 }, () => firedAt.push(clock.now()), clock);
    b.trigger();
    clock.advance(10_000);
    b.trigger();
    clock.advance(10_000);
    assert.deepEqual(firedAt, [1_000, 11_000]);
    assert.equal(clock.pending(), 0);
  });

  it("cancel() drops the period without firing and leaves no timer", () => {
    const clock = fakeClock();
    let fired = 0;
    const b = new BufferPeriod({ min: 1_000, max: 2_000 }, () => fired++, clock);
    b.trigger();
    b.cancel();
    clock.advance(5_000);
    assert.equal(fired, 0);
    assert.equal(clock.pending(), 0);
  });

  it("refuses min > max", () => {
    assert.throws(() => new BufferPeriod({ min: 3, max: 2 }, () => {}), CtsError);
  });
});

describe("normalizeBufferPeriod (CTS semantics)", () => {
  it("defaults to enabled, min 5 s, max 20 s", () => {
    assert.deepEqual(normalizeBufferPeriod(undefined), { enabled: true, min: 5_000, max: 20_000 });
    assert.deepEqual(normalizeBufferPeriod({}), { enabled: true, min: 5_000, max: 20_000 });
  });

  it("sets max to 4×min when only min is given", () => {
    assert.deepEqual(normalizeBufferPeriod({ min: "2s" }), { enabled: true, min: 2_000, max: 8_000 });
  });

  it("inherits unset fields from the parent (a task's override of the global setting)", () => {
    const global = { enabled: true, min: 1_000, max: 9_000 };
    assert.deepEqual(normalizeBufferPeriod({ max: 3_000 }, "tasks.web.bufferPeriod", global), { enabled: true, min: 1_000, max: 3_000 });
    assert.deepEqual(normalizeBufferPeriod({ enabled: false }, "bufferPeriod", global), { enabled: false, min: 1_000, max: 9_000 });
  });

  it("fails when min > max, naming the field", () => {
    assert.throws(
      () => normalizeBufferPeriod({ min: "30s", max: "10s" }, "tasks.web.bufferPeriod"),
      (err: unknown) => err instanceof CtsError && err.code === "BUFFER_PERIOD_INVALID" && err.message.includes("tasks.web.bufferPeriod.min") && err.category === "usage",
    );
  });

  it("parses Go-style durations and rejects nonsense, naming the field", () => {
    assert.equal(parseDuration("1m30s", "f"), 90_000);
    assert.equal(parseDuration("250ms", "f"), 250);
    assert.equal(parseDuration("1.5s", "f"), 1_500);
    assert.equal(parseDuration(0, "f"), 0);
    assert.throws(() => parseDuration("5 seconds", "bufferPeriod.min"), /bufferPeriod\.min '5 seconds' is not a duration/);
    assert.throws(() => parseDuration(-1, "bufferPeriod.max"), /bufferPeriod\.max/);
  });
});
