import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { createReachabilityTracker, REMINDER_EVERY_MS } from "../../src/consul/reachability.ts";
import { CtsError } from "../../src/errors/cts-error.ts";
import { createLogger } from "../../src/log/logger.ts";
import { fakeClock } from "../support/fake-clock.ts";

const unreachable = () => new CtsError("CONSUL_UNREACHABLE", "external", "Cannot reach Consul at http://127.0.0.1:1 while reading: ECONNREFUSED.");

describe("whether Consul answers (one tracker per client)", () => {
  it("one warn line when lost, reminders at most once a minute, one info line when back; listeners hear both", () => {
    const clock = fakeClock();
    const lines: string[] = [];
    const told: boolean[] = [];
    const t = createReachabilityTracker(() => "http://127.0.0.1:1", createLogger({ write: (l) => lines.push(l) }), clock);
    t.onChange((r) => told.push(r));
    assert.equal(t.reachable, true);
    for (let i = 0; i < 50; i++) t.failed(unreachable());
    assert.equal(t.reachable, false);
    assert.ok(t.lostSince);
    assert.match(t.reason!, /ECONNREFUSED/);
    clock.advance(REMINDER_EVERY_MS);
    t.failed(unreachable());
    t.failed(unreachable());
    t.answered();
    t.answered();
    assert.equal(t.reachable, true);
    assert.deepEqual(told, [false, true]);
    assert.equal(lines.filter((l) => /\[WARN\].*lost contact with Consul/.test(l)).length, 1);
    assert.equal(lines.filter((l) => /\[WARN\].*still unreachable/.test(l)).length, 1);
    assert.equal(lines.filter((l) => /\[INFO\].*answers again \(unreachable for 60 s, 52 failed calls\)/.test(l)).length, 1);
    assert.equal(lines.length, 3);
  });

  it("an answer Consul gave (a 403, a 500) is not an outage", () => {
    const t = createReachabilityTracker(() => "x");
    t.failed(new CtsError("CONSUL_PERMISSION_DENIED", "external", "denied", { detail: { status: 403 } }));
    t.failed(new CtsError("CONSUL_HTTP_ERROR", "external", "500", { detail: { status: 500 } }));
    assert.equal(t.reachable, true);
  });
});
