import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { pause } from "../../src/pause.ts";

describe("pause, the one sleep", () => {
  it("resolves true after the full wait", async () => {
    assert.equal(await pause(5), true);
  });

  it("resolves false at once when the signal aborts mid-wait", async () => {
    const stop = new AbortController();
    const waiting = pause(60_000, stop.signal);
    stop.abort();
    assert.equal(await waiting, false);
  });

  it("does not wait at all on an aborted signal", async () => {
    assert.equal(await pause(60_000, AbortSignal.abort()), false);
  });
});
