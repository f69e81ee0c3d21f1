import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { createLogger, redactSecret } from "../../src/log/logger.ts";

const capture = (json: boolean, level: "debug" | "info" = "info") => {
  const lines: string[] = [];
  return { lines, log: createLogger({ json, level, write: (l) => lines.push(l) }) };
};

describe("logger", () => {
  it("writes CTS-like text: time, level, component, message, then fields", () => {
    const { lines, log } = capture(false);
    log.child("ctrl").info("task 'web': applied", { task: "web", add: 1, note: "two words" });
    assert.equal(lines.length, 1);
    assert.match(lines[0]!, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z \[INFO\] ctrl: task 'web': applied task=web add=1 note="two words"$/);
  });

  it("does not repeat a component the message already starts with, as CTS's lines read", () => {
    const { lines, log } = capture(false);
    log.child("ha").info("ha: acquired leadership lock", { id: "cts-01" });
    log.child("ctrl").child("ha").info("ha: renewed");
    assert.match(lines[0]!, /\[INFO\] ha: acquired leadership lock id=cts-01$/);
    assert.match(lines[1]!, /\[INFO\] ha: renewed$/);
  });

  it("writes one parseable JSON object per line carrying task and component", () => {
    const { lines, log } = capture(true);
    log.child("ctrl").child("runner", { task: "web" }).warn("retrying", { attempt: 2 });
    log.info("plain");
    assert.equal(lines.length, 2);
    const [first, second] = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    assert.equal(typeof first!.time, "string");
    assert.ok(!Number.isNaN(Date.parse(String(first!.time))));
    assert.deepEqual({ ...first, time: undefined }, { time: undefined, level: "warn", component: "ctrl.runner", task: "web", message: "retrying", attempt: 2 });
    assert.equal(second!.message, "plain");
    assert.equal(second!.level, "info");
  });

  it("drops lines below the level", () => {
    const { lines, log } = capture(false, "info");
    log.debug("hidden");
    log.trace("hidden");
    log.error("shown");
    assert.deepEqual(lines.map((l) => l.replace(/^\S+ /, "")), ["[ERROR] shown"]);
  });

  it("redacts registered secrets in messages and fields, in text and JSON", () => {
    const secret = "s3cr3t-\"token\"-value";
    redactSecret(secret);
    for (const json of [false, true]) {
      const { lines, log } = capture(json);
      log.info(`using ${secret}`, { header: `Bearer ${secret}`, nested: { value: secret } });
      assert.equal(lines.length, 1);
      assert.ok(!lines[0]!.includes("s3cr3t"), lines[0]);
      assert.ok(lines[0]!.includes("[redacted]"));
    }
  });

  it("censors fields named like secrets whatever they hold", () => {
    const { lines, log } = capture(true);
    log.info("connecting", { token: "abc", consul: { token: "def" }, address: "127.0.0.1:8500" });
    const rec = JSON.parse(lines[0]!) as Record<string, unknown>;
    assert.equal(rec.token, "[redacted]");
    assert.deepEqual(rec.consul, { token: "[redacted]" });
    assert.equal(rec.address, "127.0.0.1:8500");
  });
});
