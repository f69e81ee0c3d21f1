import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { every } from "../../src/time/clock.ts";
import { followCron, parseCron } from "../../src/task/cron.ts";
import { fakeClock } from "../support/fake-clock.ts";

describe("cron", () => {
  const at = (s: string) => new Date(s);
  it("accepts 5 fields (minute first)", () => {
    assert.deepEqual(parseCron("*/15 * * * *").next(at("2026-01-01T10:07:00")), at("2026-01-01T10:15:00"));
  });
  it("accepts 6 fields with seconds first", () => {
    assert.deepEqual(parseCron("*/10 * * * * *").next(at("2026-01-01T10:00:03")), at("2026-01-01T10:00:10"));
  });
  it("accepts 7 fields with a year last", () => {
    assert.deepEqual(parseCron("0 0 12 1 jan * 2027").next(at("2026-06-01T00:00:00")), at("2027-01-01T12:00:00"));
  });
  it("understands names and shortcuts", () => {
    assert.deepEqual(parseCron("0 9 * * mon-fri").next(at("2026-11-21T10:00:00")), at("2026-11-23T09:00:00"));
    assert.deepEqual(parseCron("@hourly").next(at("2026-01-01T10:30:00")), at("2026-01-01T11:00:00"));
  });
  it("names the bad field", () => {
    assert.throws(() => parseCron("61 * * * *"), /minutes/);
    assert.throws(() => parseCron("* * *"), /fields/);
  });
});

describe("a cron schedule on a clock", () => {
  const iso = (ms: number) => new Date(ms).toISOString();

  it("calls at each matching time of the clock's wall time, and stops when told", () => {
    const clock = fakeClock({ wallStart: Date.parse("2026-01-01T10:07:00Z") });
    const seen: string[] = [];
    const stop = followCron(parseCron("*/15 * * * *"), clock, () => (seen.push(iso(clock.wallNow())), true));
    clock.advance(60 * 60_000);
    assert.deepEqual(seen, ["2026-01-01T10:15:00.000Z", "2026-01-01T10:30:00.000Z", "2026-01-01T10:45:00.000Z", "2026-01-01T11:00:00.000Z"]);
    stop();
    assert.equal(clock.pending(), 0);
    clock.advance(60 * 60_000);
    assert.equal(seen.length, 4);
  });

  it("ends when the call answers false", () => {
    const clock = fakeClock({ wallStart: Date.parse("2026-01-01T10:07:00Z") });
    let calls = 0;
    followCron(parseCron("*/15 * * * *"), clock, () => (calls++, false));
    clock.advance(60 * 60_000);
    assert.equal(calls, 1);
    assert.equal(clock.pending(), 0);
  });

  it("chains waits longer than one timer can take, and calls only at the time", () => {
    const clock = fakeClock({ wallStart: Date.parse("2026-06-01T00:00:00Z") });
    const seen: string[] = [];
    followCron(parseCron("0 0 12 1 jan *"), clock, () => (seen.push(iso(clock.wallNow())), true));
    const target = parseCron("0 0 12 1 jan *").next(new Date(Date.parse("2026-06-01T00:00:00Z"))).getTime();
    clock.advance(target - clock.wallNow() - 1);
    assert.deepEqual(seen, []);
    clock.advance(1);
    assert.deepEqual(seen, [iso(target)]);
  });
});

describe("a repeating timer on a clock", () => {
  it("calls every interval until stopped", () => {
    const clock = fakeClock();
    const at: number[] = [];
    const stop = every(clock, 1000, () => at.push(clock.now()));
    clock.advance(3500);
    assert.deepEqual(at, [1000, 2000, 3000]);
    stop();
    clock.advance(5000);
    assert.deepEqual(at, [1000, 2000, 3000]);
    assert.equal(clock.pending(), 0);
  });
});
