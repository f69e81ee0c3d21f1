import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { AROUND_JITTER, backoffDelay, jittered, NO_JITTER } from "../../src/time/backoff.ts";

describe("backoff", () => {
  const low = () => 0;
  const high = () => 1;

  it("doubles the wait per failure from the base up to the cap", () => {
    const b = { baseMs: 100, maxMs: 1_000, jitter: NO_JITTER };
    assert.deepEqual([1, 2, 3, 4, 5, 6].map((n) => backoffDelay(b, n)), [100, 200, 400, 800, 1_000, 1_000]);
  });

  it("draws the wait between half and all of the capped value by default", () => {
    const b = { baseMs: 100, maxMs: 1_000 };
    assert.deepEqual([1, 2, 5].map((n) => backoffDelay(b, n, high)), [100, 200, 1_000]);
    assert.deepEqual([1, 2, 5].map((n) => backoffDelay(b, n, low)), [50, 100, 500]);
  });

  it("stays at the cap through a long outage (no overflow to Infinity)", () => {
    assert.equal(backoffDelay({ baseMs: 250, maxMs: 30_000, jitter: NO_JITTER }, 10_000), 30_000);
    assert.equal(backoffDelay({ baseMs: 1_000, maxMs: Number.POSITIVE_INFINITY, jitter: NO_JITTER }, 3), 4_000);
  });

  it("treats a count below one as the first failure", () => {
    assert.equal(backoffDelay({ baseMs: 100, maxMs: 1_000, jitter: NO_JITTER }, 0), 100);
  });

  it("scales a wait within a jitter range", () => {
    assert.equal(jittered(1_000, AROUND_JITTER, low), 800);
    assert.equal(jittered(1_000, AROUND_JITTER, high), 1_200);
  });
});
