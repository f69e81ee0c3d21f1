import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { parseCron } from "../../src/task/cron.ts";

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
