import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { Duration, formatDuration, parseDuration } from "../../src/time/duration.ts";
import { CtsError } from "../../src/errors/cts-error.ts";

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

describe("Duration", () => {
  it("parses every Go unit and sums the parts", () => {
    assert.equal(Duration.parse("1h2m3s", "f").ms, 3_723_000);
    assert.equal(Duration.parse("1.5s", "f").ms, 1_500);
    assert.equal(Duration.parse("1500us", "f").ms, 1.5);
    assert.equal(Duration.parse("2000000ns", "f").ms, 2);
    assert.equal(Duration.parse(250, "f").ms, 250);
  });
  it("names the field when the text is not a duration", () => {
    assert.throws(() => Duration.parse("5 seconds", "bufferPeriod.min"), (e: unknown) => e instanceof CtsError && e.code === "DURATION_INVALID" && /bufferPeriod\.min '5 seconds' is not a duration/.test(e.message));
    assert.throws(() => Duration.parse(-1, "bufferPeriod.max"), /bufferPeriod\.max '-1' is not a non-negative number/);
    assert.throws(() => Duration.parse("5", "driver.terraform.timeout"), /driver\.terraform\.timeout '5'/);
  });
  it("formats back as CTS and Terraform failures print it", () => {
    for (const [ms, text] of [[0, "0s"], [800, "800ms"], [1500, "1.5s"], [45_000, "45s"], [90_000, "1m30s"], [30 * 60_000, "30m"], [2 * 3_600_000 + 1000, "2h1s"]] as const)
      assert.equal(Duration.ofMs(ms).toString(), text);
  });
  it("round-trips through its text", () => {
    for (const text of ["5s", "1m30s", "500ms", "2h", "1h0m1.5s"]) assert.equal(Duration.parse(Duration.parse(text, "f").toString(), "f").ms, Duration.parse(text, "f").ms);
  });
  it("gives Consul exact text for TTLs", () => {
    assert.equal(Duration.ofMs(15_000).toConsul(), "15s");
    assert.equal(Duration.ofMs(1_500).toConsul(), "1500ms");
  });
  it("compares", () => {
    const a = Duration.parse("1m", "a");
    const b = Duration.parse("60s", "b");
    assert.equal(a.compare(b), 0);
    assert.ok(a.equals(b));
    assert.equal(Duration.parse("500ms", "c").compare(a), -1);
    assert.equal(a.times(4).compare(a), 1);
  });
});
