import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { formatDuration, parseDuration } from "../../src/config/duration.ts";

describe("durations", () => {
  it("parses Go-style text and ms numbers", () => {
    assert.equal(parseDuration("5s"), 5000);
    assert.equal(parseDuration("1m30s"), 90_000);
    assert.equal(parseDuration("250ms"), 250);
    assert.equal(parseDuration(1500), 1500);
    assert.equal(parseDuration("0"), 0);
  });
  it("refuses what is not a duration", () => {
    for (const bad of ["5", "five seconds", "5sx", "", -1]) assert.equal(parseDuration(bad as string), undefined, String(bad));
  });
  it("formats like CTS", () => {
    assert.equal(formatDuration(5000), "5s");
    assert.equal(formatDuration(90_000), "1m30s");
  });
});
