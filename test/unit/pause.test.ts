import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { pause } from "../../src/time/pause.ts";
import { fakeClock } from "../support/fake-clock.ts";
import { settled } from "../support/waits.ts";

describe("pause, the one sleep", () => {
  it("resolves true after the full wait, and not before", async () => {
    const clock = fakeClock();
    let result: boolean | undefined;
    void pause(5_000, undefined, clock).then((r) => (result = r));
    clock.advance(4_999);
    await settled();
    assert.equal(result, undefined);
    clock.advance(1);
    await settled();
    assert.equal(result, true);
  });

  it("resolves false at once when the signal aborts mid-wait, and leaves no timer", async () => {
    const clock = fakeClock();
    const stop = new AbortController();
    const waiting = pause(60_000, stop.signal, clock);
    assert.equal(clock.pending(), 1);
    stop.abort();
    assert.equal(await waiting, false);
    assert.equal(clock.pending(), 0);
  });

  it("does not wait at all on an aborted signal", async () => {
    const clock = fakeClock();
    assert.equal(await pause(60_000, AbortSignal.abort(), clock), false);
    assert.equal(clock.pending(), 0);
  });

  it("waits on the real clock by default", async () => {
    assert.equal(await pause(1), true);
  });
});
