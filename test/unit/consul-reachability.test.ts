import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createReachabilityTracker, isLeaderless, isUnavailable, REMINDER_EVERY_MS, SERVER_ERRORS_IN_A_ROW } from "../../src/consul/reachability.ts";
import { toConsulError } from "../../src/consul/api-error.ts";
import { createConsulClient } from "../../src/consul/client.ts";
import { consulProblem } from "../../src/daemon/registration.ts";
import { CtsError } from "../../src/errors/cts-error.ts";
import { createLogger } from "../../src/log/logger.ts";
import { fakeClock } from "../support/fake-clock.ts";

const unreachable = () => new CtsError("CONSUL_UNREACHABLE", "external", "Cannot reach Consul at http://127.0.0.1:1 while reading: ECONNREFUSED.");
const call = { what: "reading the health of service 'web'", permission: "service:read", url: "http://127.0.0.1:8500" };
/** Consul's own error answers, mapped as the transport maps them. */
const answer = (status: number, body: string) => toConsulError(Object.assign(new Error(`HTTP ${status}`), { response: { statusCode: status, body } }), call);
const noLeader = () => answer(500, "No cluster leader");
const rpcNoLeader = () => answer(500, "rpc error making call: No cluster leader");

function tracker() {
  const clock = fakeClock();
  const lines: string[] = [];
  const told: boolean[] = [];
  const t = createReachabilityTracker(() => "http://127.0.0.1:8500", createLogger({ write: (l) => lines.push(l) }), clock);
  t.onChange((r) => told.push(r));
  const count = (re: RegExp) => lines.filter((l) => re.test(l)).length;
  return { clock, lines, told, t, count };
}

describe("whether Consul answers (one tracker per client)", () => {
  it("one warn line when lost, reminders at most once a minute, one info line when back; listeners hear both", () => {
    const { clock, lines, told, t, count } = tracker();
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
    assert.equal(count(/\[WARN\].*lost contact with Consul/), 1);
    assert.equal(count(/\[WARN\].*still unavailable/), 1);
    assert.equal(count(/\[INFO\].*answers again \(unavailable for 60 s, 52 failed calls\)/), 1);
    assert.equal(lines.length, 3);
  });

  it("classifies Consul's answers: no leader and 502/503/504 are unavailable; a 403, a 404, an ordinary 500 are answers", () => {
    for (const e of [noLeader(), rpcNoLeader(), answer(500, "leadership lost while committing log"), answer(503, ""), answer(502, "Bad Gateway"), answer(504, "")]) {
      assert.equal(isLeaderless(e), true, e.message);
      assert.equal(isUnavailable(e), true, e.message);
    }
    assert.equal(isUnavailable(unreachable()), true);
    for (const e of [answer(403, "Permission denied"), answer(404, ""), answer(500, "some other failure"), answer(429, "")]) assert.equal(isUnavailable(e), false, e.message);
    assert.match(noLeader().message, /HTTP 500.*No cluster leader/);
    // High availability's own errors (src/ha/kv.ts) keep Consul's reply: the same rule applies.
    assert.equal(isUnavailable(new CtsError("HA_CONSUL_FAILED", "external", "x", { detail: { status: 500, reply: "No cluster leader" } })), true);
    assert.equal(isUnavailable(new CtsError("HA_CONSUL_TIMEOUT", "external", "x")), true);
    assert.equal(isUnavailable(new CtsError("HA_CONSUL_UNREACHABLE", "external", "x")), true);
    assert.equal(isUnavailable(new CtsError("HA_CONSUL_FAILED", "external", "x", { detail: { status: 403 } })), false);
  });

  it("an agent without a leader is Consul unavailable, as an unreachable one is: one warn line, stale, one back line", () => {
    const { lines, told, t, count } = tracker();
    t.failed(noLeader());
    assert.equal(t.reachable, false);
    assert.match(t.reason!, /No cluster leader/);
    for (let i = 0; i < 20; i++) t.failed(rpcNoLeader());
    t.failed(answer(503, ""));
    assert.equal(t.reachable, false);
    t.answered();
    assert.equal(t.reachable, true);
    assert.deepEqual(told, [false, true]);
    assert.equal(count(/\[WARN\].*lost contact with Consul: .*No cluster leader/), 1);
    assert.equal(lines.length, 2, lines.join("\n"));
  });

  it("`/v1/status/leader` answering \"\" is unavailable; what the agent answers alone never brings Consul back", () => {
    const { told, t } = tracker();
    t.answered("agent");
    assert.equal(t.reachable, true, "an agent's own answer loses nothing either");
    t.answered("no-leader");
    assert.equal(t.reachable, false);
    // The agent's services, a registration, a known leader's address: the agent alone answered.
    for (let i = 0; i < 10; i++) t.answered("agent");
    t.failed(answer(403, "Permission denied"), undefined, "agent");
    assert.equal(t.reachable, false, "an agent-only answer does not bring Consul back");
    t.answered("servers");
    assert.equal(t.reachable, true);
    assert.deepEqual(told, [false, true]);
  });

  it("does not flap (HA's mix of calls during a quorum loss): 500s, timeouts and the agent's own answers interleaved give one lost, and back only on a real answer", () => {
    const { clock, told, t, count } = tracker();
    const timeout = () => new CtsError("CONSUL_TIMEOUT", "external", "Consul at http://127.0.0.1:8500 did not answer renewing the session in time.");
    // 43 s of what an HA member saw: session renewals timing out, KV reads answering 500, the
    // health probe's empty leader, the registration check's agent answers — every second.
    for (let s = 0; s < 43; s++) {
      const sent = t.sent();
      t.failed([timeout, noLeader, rpcNoLeader][s % 3]!(), sent);
      t.answered("no-leader", t.sent());
      t.answered("agent", t.sent());
      t.failed(answer(404, ""), t.sent(), "agent");
      clock.advance(1_000);
    }
    assert.deepEqual(told, [false], "lost once, never back meanwhile");
    assert.equal(count(/lost contact/), 1);
    assert.equal(count(/still unavailable/), 0, "no reminder within the first minute");
    clock.advance(20_000);
    t.failed(noLeader());
    t.failed(noLeader());
    assert.equal(count(/still unavailable/), 1, "one reminder a minute later");
    t.failed(answer(404, "Key not found"));
    assert.equal(t.reachable, true, "a 404 of the servers is a real answer");
    assert.deepEqual(told, [false, true]);
  });

  it("an outcome counts only when its call was sent after the last change", () => {
    const { told, t } = tracker();
    const oldRead = t.sent(); // a blocking read sent while Consul worked
    t.failed(noLeader());
    assert.equal(t.reachable, false);
    t.answered("servers", oldRead);
    assert.equal(t.reachable, false, "an old blocking read answering late does not bring Consul back");
    const heldRead = t.sent(); // sent during the loss, held by the server for a leader
    const fresh = t.sent();
    t.answered("servers", fresh);
    assert.equal(t.reachable, true);
    t.failed(rpcNoLeader(), heldRead);
    assert.equal(t.reachable, true, "a call sent before Consul came back that fails late does not lose it again");
    t.failed(unreachable(), t.sent());
    assert.equal(t.reachable, false, "a new failure does");
    assert.deepEqual(told, [false, true, false]);
  });

  it(`${SERVER_ERRORS_IN_A_ROW} other server errors in a row with no real answer between make Consul unavailable; a 403 is an answer`, () => {
    const { t } = tracker();
    t.failed(new CtsError("CONSUL_PERMISSION_DENIED", "external", "denied", { detail: { status: 403 } }));
    t.failed(answer(500, "rpc error making call: EOF"));
    t.answered();
    t.failed(answer(500, "rpc error making call: EOF"));
    assert.equal(t.reachable, true, "errors with a real answer between them are not in a row");
    for (let i = 1; i < SERVER_ERRORS_IN_A_ROW; i++) t.failed(answer(500, "rpc error making call: EOF"));
    assert.equal(t.reachable, false);
    assert.match(t.reason!, /3 server errors in a row/);
  });

  it("the transport feeds it: Consul's 500 'No cluster leader' and an empty leader lose it; the agent's own endpoints do not bring it back; a real read does", async () => {
    let leader = "";
    let health: [number, string] = [500, "No cluster leader"];
    const server: Server = createServer((req, res) => {
      if (req.url!.startsWith("/v1/status/leader")) return void res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(leader));
      if (req.url!.startsWith("/v1/agent/services")) return void res.writeHead(200, { "content-type": "application/json" }).end("{}");
      res.writeHead(health[0], { "content-type": health[0] === 200 ? "application/json" : "text/plain", "x-consul-index": "7" }).end(health[1]);
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const client = createConsulClient({ address: `127.0.0.1:${(server.address() as AddressInfo).port}`, token: "t" });
    try {
      const told: boolean[] = [];
      client.reachability.onChange((r) => told.push(r));
      assert.match(String(await consulProblem(client)), /has no leader/);
      assert.equal(client.reachability.reachable, false, "an empty leader: Consul unavailable");
      await assert.rejects(client.healthService({ service: "web" }), /No cluster leader/);
      assert.equal(client.reachability.reachable, false);
      await client.call({ what: "listing the agent's services", permission: "x" }, {}, { answeredBy: () => "agent" }, (c, common) => c.agent.service.list(common));
      assert.equal(client.reachability.reachable, false, "the agent's own answer does not bring Consul back");
      leader = "127.0.0.1:8300";
      assert.equal(await consulProblem(client), undefined);
      assert.equal(client.reachability.reachable, false, "a leader's address is the agent's answer, not the servers'");
      health = [200, "[]"];
      await client.healthService({ service: "web" });
      assert.equal(client.reachability.reachable, true);
      assert.deepEqual(told, [false, true]);
    } finally {
      client.close();
      await new Promise((r) => server.close(r));
    }
  });
});
