import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { CtsError } from "../../src/errors/cts-error.ts";
import { refusedServiceName } from "../../src/consul/api-error.ts";
import { createPrometheusMetrics } from "../../src/metrics/prometheus.ts";
import { View, stableStringify, type ViewFetch } from "../../src/watch/view.ts";
import { fakeClock, type FakeClock } from "../support/fake-clock.ts";

type Answer = { data: unknown; index: bigint } | { error: unknown } | "block";
interface Call {
  index: bigint;
  wait: number;
  at: number;
}

/**
 * A scripted fetch: answers in order; "block" waits until aborted; the script's end blocks too.
 * Each call is stamped with the time on `clock`, the fake clock the view under test waits on.
 */
function scripted(answers: Answer[], clock: FakeClock): { fetch: ViewFetch<unknown>; calls: Call[]; aborted: () => number } {
  const calls: Call[] = [];
  let aborts = 0;
  const fetch: ViewFetch<unknown> = ({ index, wait, signal }) => {
    calls.push({ index, wait, at: clock.now() });
    const next = answers.shift() ?? "block";
    if (next === "block") {
      return new Promise((_resolve, reject) => {
        signal.addEventListener("abort", () => {
          aborts++;
          const err = new Error("aborted");
          err.name = "AbortError";
          reject(err);
        });
      });
    }
    if ("error" in next) return Promise.reject(next.error);
    return Promise.resolve(next);
  };
  return { fetch, calls, aborted: () => aborts };
}

const fast = { waitMs: 2_000, minIntervalMs: 1, jitterMs: 0, backoffBaseMs: 20, backoffMaxMs: 80, fatalRetryMs: 30 };

function collect(view: View<unknown>) {
  const data: unknown[] = [];
  const errors: { error: CtsError; fatal: boolean }[] = [];
  view.addListener({ onData: (d) => data.push(d), onError: (error, fatal) => errors.push({ error, fatal }) });
  return { data, errors };
}

function httpError(status: number): CtsError {
  return new CtsError("CONSUL_HTTP_ERROR", "external", `HTTP ${status}`, { detail: { status } });
}

describe("View (one blocking-query loop)", () => {
  it("fetches at index 0 first, then blocks on the returned index with the configured wait", async () => {
    const clock = fakeClock();
    const s = scripted([{ data: ["a"], index: 7n }], clock);
    const view = new View("k", s.fetch, { timing: fast, clock });
    const seen = collect(view);
    view.start();
    await clock.runUntil(() => s.calls.length === 2, "the second fetch");
    view.close();
    await view.done();
    assert.deepEqual(
      s.calls.map((c) => [c.index, c.wait]),
      [
        [0n, 2_000],
        [7n, 2_000],
      ],
    );
    assert.deepEqual(seen.data, [["a"]]);
    assert.deepEqual(view.data, ["a"]);
  });

  it("asks again without notifying when the index did not move; a different body at that index makes the next read a full one", async () => {
    const clock = fakeClock();
    const s = scripted(
      [
        { data: ["a"], index: 7n },
        { data: ["a"], index: 7n },
        { data: ["b"], index: 7n },
      ],
      clock,
    );
    const view = new View("k", s.fetch, { timing: fast, clock });
    const seen = collect(view);
    view.start();
    await clock.runUntil(() => s.calls.length === 4, "the fourth fetch");
    view.close();
    assert.deepEqual(
      s.calls.map((c) => c.index),
      [0n, 7n, 7n, 0n],
    );
    // Same index means "nothing changed": the body is not told, but one that differs (Consul
    // answering a token whose ACLs changed at the old index) is checked by a full read.
    assert.deepEqual(seen.data, [["a"]]);
  });

  it("resets to index 0 and re-reads when the index goes backwards", async () => {
    const clock = fakeClock();
    const s = scripted(
      [
        { data: ["a"], index: 50n },
        { data: ["stale"], index: 3n },
        { data: ["b"], index: 4n },
      ],
      clock,
    );
    const view = new View("k", s.fetch, { timing: fast, clock });
    const seen = collect(view);
    view.start();
    await clock.runUntil(() => s.calls.length === 4, "the fourth fetch");
    view.close();
    assert.deepEqual(
      s.calls.map((c) => c.index),
      [0n, 50n, 0n, 4n],
    );
    assert.deepEqual(seen.data, [["a"], ["b"]]);
  });

  it("treats an index of 0 as 1 so the next query still blocks", async () => {
    const clock = fakeClock();
    const s = scripted([{ data: ["a"], index: 0n }], clock);
    const view = new View("k", s.fetch, { timing: fast, clock });
    view.start();
    await clock.runUntil(() => s.calls.length === 2, "the second fetch");
    view.close();
    assert.equal(s.calls[1]!.index, 1n);
  });

  it("does not notify for identical data at a new index (key order does not matter)", async () => {
    const clock = fakeClock();
    const s = scripted(
      [
        { data: { x: 1, y: [1, 2] }, index: 5n },
        { data: { y: [1, 2], x: 1 }, index: 6n },
        { data: { x: 2, y: [1, 2] }, index: 7n },
      ],
      clock,
    );
    const view = new View("k", s.fetch, { timing: fast, clock });
    const seen = collect(view);
    view.start();
    await clock.runUntil(() => s.calls.length === 4, "the fourth fetch");
    view.close();
    assert.equal(seen.data.length, 2);
    assert.deepEqual(seen.data[1], { x: 2, y: [1, 2] });
  });

  it("passes the accepted answer's source as sameAs, keeps its data on `unchanged`, and forgets a source it did not accept", async () => {
    const clock = fakeClock();
    const seenSameAs: (string | undefined)[] = [];
    const answers: Array<Awaited<ReturnType<ViewFetch<unknown>>> | "block"> = [
      { data: ["a"], index: 5n, source: "raw-1" },
      { index: 6n, unchanged: true },
      { data: ["b"], index: 2n, source: "raw-2" }, // index went backwards: not accepted
      { data: ["b"], index: 3n, source: "raw-2" },
    ];
    const fetch: ViewFetch<unknown> = ({ sameAs, signal }) => {
      seenSameAs.push(sameAs);
      const next = answers.shift() ?? "block";
      if (next === "block") return new Promise((_r, reject) => signal.addEventListener("abort", () => reject(Object.assign(new Error("aborted"), { name: "AbortError" }))));
      return Promise.resolve(next);
    };
    const view = new View("k", fetch, { timing: fast, clock });
    const seen = collect(view);
    view.start();
    await clock.runUntil(() => seenSameAs.length === 5, "the fifth fetch");
    view.close();
    assert.deepEqual(seenSameAs, [undefined, "raw-1", "raw-1", "raw-1", "raw-2"]);
    assert.deepEqual(seen.data, [["a"], ["b"]]);
  });

  it("keeps at least the minimum interval (plus its jitter) between two fetches", async () => {
    const clock = fakeClock();
    const s = scripted(
      [
        { data: 1, index: 1n },
        { data: 2, index: 2n },
        { data: 3, index: 3n },
      ],
      clock,
    );
    const view = new View("k", s.fetch, { timing: { ...fast, minIntervalMs: 40, jitterMs: 10 }, random: () => 0.5, clock });
    view.start();
    await clock.runUntil(() => s.calls.length === 4, "the fourth fetch");
    view.close();
    // Answers took no time on the fake clock: each gap is the whole interval, 40 + 0.5 × 10 ms.
    assert.deepEqual(
      s.calls.slice(1).map((c, i) => c.at - s.calls[i]!.at),
      [45, 45, 45],
    );
  });

  it("counts the time an answer took against the minimum interval", async () => {
    const clock = fakeClock();
    const calls: number[] = [];
    const fetch: ViewFetch<unknown> = ({ signal }) => {
      calls.push(clock.now());
      if (calls.length > 2) return new Promise((_r, reject) => signal.addEventListener("abort", () => reject(Object.assign(new Error("aborted"), { name: "AbortError" }))));
      // The answer arrives 30 ms of (fake) time after the request.
      return new Promise((resolve) => clock.setTimeout(() => resolve({ data: calls.length, index: BigInt(calls.length) }), 30));
    };
    const view = new View("k", fetch, { timing: { ...fast, minIntervalMs: 100, jitterMs: 0 }, clock });
    view.start();
    await clock.runUntil(() => calls.length === 3, "the third fetch");
    view.close();
    assert.deepEqual(calls, [0, 100, 200], "30 ms answering + 70 ms pause = one fetch per 100 ms");
  });

  it("backs off exponentially on errors, never gives up, and re-reads from index 0 after recovering", async () => {
    const clock = fakeClock();
    const boom = new Error("connect ECONNREFUSED");
    const s = scripted([{ data: ["a"], index: 9n }, { error: boom }, { error: boom }, { error: boom }, { error: boom }, { data: ["b"], index: 2n }], clock);
    const view = new View("k", s.fetch, { timing: fast, random: () => 1, clock });
    const seen = collect(view);
    view.start();
    await clock.runUntil(() => s.calls.length === 7, "the seventh fetch");
    view.close();
    const gaps = [2, 3, 4, 5].map((i) => s.calls[i]!.at - s.calls[i - 1]!.at);
    // 20, 40, 80, then capped at 80 (random pinned to the top of the jitter range).
    assert.deepEqual(gaps, [20, 40, 80, 80]);
    assert.equal(seen.errors.length, 4);
    assert.ok(seen.errors.every((e) => !e.fatal && e.error instanceof CtsError));
    assert.deepEqual(
      s.calls.map((c) => c.index),
      [0n, 9n, 0n, 0n, 0n, 0n, 2n],
    );
    assert.deepEqual(seen.data, [["a"], ["b"]]);
    assert.equal(view.lastError, undefined, "a success clears the error");
  });

  it("jitters the backoff down to half of the full delay at most", async () => {
    const clock = fakeClock();
    const boom = new Error("connect ECONNREFUSED");
    const s = scripted([{ error: boom }, { error: boom }, { error: boom }], clock);
    const view = new View("k", s.fetch, { timing: fast, random: () => 0, clock });
    view.start();
    await clock.runUntil(() => s.calls.length === 4, "the fourth fetch");
    view.close();
    assert.deepEqual(
      s.calls.slice(1).map((c, i) => c.at - s.calls[i]!.at),
      [10, 20, 40],
    );
  });

  it("reports 4xx (other than 429) as fatal but keeps retrying slowly, so a fixed ACL heals", async () => {
    const clock = fakeClock();
    const s = scripted([{ error: httpError(403) }, { error: httpError(429) }, { data: ["ok"], index: 3n }], clock);
    const view = new View("k", s.fetch, { timing: fast, random: () => 0, clock });
    const seen = collect(view);
    view.start();
    await clock.runUntil(() => seen.data.length === 1, "the data after the errors");
    view.close();
    assert.deepEqual(
      seen.errors.map((e) => [e.error.detail.status, e.fatal]),
      [
        [403, true],
        [429, false],
      ],
    );
    assert.equal(s.calls[1]!.at - s.calls[0]!.at, 22.5, "fatal errors retry after fatalRetryMs, jittered down by at most a quarter");
    assert.equal(s.calls[2]!.at - s.calls[1]!.at, 20, "a 429 backs off like any other error (the second failure: 2 × 20 ms, jittered down to half)");
  });

  it("stops asking when Consul refuses the query itself (a service name it cannot serve): no retry, no query left open", async () => {
    const clock = fakeClock();
    const refusal = refusedServiceName(new CtsError("CONSUL_BAD_REQUEST", "usage", "HTTP 400", { detail: { status: 400 } }), "odd\nline")!;
    // Were the view to ask again, it would get data: the script proves it never does.
    const s = scripted([{ error: refusal }, { data: ["never"], index: 9n }], clock);
    const metrics = createPrometheusMetrics({ defaultMetrics: false });
    const view = new View("health:odd", s.fetch, { timing: fast, metrics, clock });
    const told: CtsError[] = [];
    const plain = collect(view);
    view.addListener({ onData: () => assert.fail("no data"), onError: () => assert.fail("a refusal is not an error"), onRefused: (e) => told.push(e) });
    view.start();
    await view.done();
    assert.equal(view.closed, false, "the loop ended by itself, not by close()");
    assert.equal(s.calls.length, 1);
    assert.equal(clock.pending(), 0, "no retry timer");
    assert.equal(view.refused, refusal);
    assert.deepEqual(told, [refusal]);
    assert.deepEqual(plain.errors, [{ error: refusal, fatal: true }], "a listener without onRefused hears it as a fatal error");
    const gauge = (await metrics.registry.getMetricsAsJSON()).find((m) => m.name === "cts_consul_blocking_queries");
    assert.ok((gauge?.values ?? []).every((v) => v.value === 0), "no blocking query open");
    view.close();
  });

  it("close() aborts the blocking request and leaves no timer or promise behind", async () => {
    const clock = fakeClock();
    const s = scripted([{ data: 1, index: 1n }, "block"], clock);
    const view = new View("k", s.fetch, { timing: fast, clock });
    view.start();
    await clock.runUntil(() => s.calls.length === 2, "the blocking fetch");
    assert.equal(clock.pending(), 0, "a blocking fetch waits on Consul, not on a timer");
    view.close();
    await view.done();
    assert.equal(s.aborted(), 1);
    assert.ok(view.closed);
    assert.equal(clock.pending(), 0, "no new timers");
  });

  // The backoff is an hour of a clock that never moves: done() resolving shows close() ended the
  // pause rather than waiting it out.
  it("close() during a backoff pause ends the loop at once and clears its timer", async () => {
    const clock = fakeClock();
    const s = scripted([{ error: new Error("down") }], clock);
    const view = new View("k", s.fetch, { timing: { ...fast, backoffBaseMs: 3_600_000, backoffMaxMs: 3_600_000 }, clock });
    const errors = collect(view).errors;
    view.start();
    await clock.runUntil(() => errors.length === 1, "the first error");
    assert.equal(clock.pending(), 1, "the loop waits out its backoff");
    view.close();
    await view.done();
    assert.equal(s.calls.length, 1);
    assert.equal(clock.pending(), 0, "the backoff timer is gone");
    assert.equal(clock.now(), 0, "no time passed");
  });

  it("keeps serving other listeners when one throws", async () => {
    const clock = fakeClock();
    const s = scripted([{ data: 1, index: 1n }], clock);
    const view = new View("k", s.fetch, { timing: fast, clock });
    view.addListener({ onData: () => { throw new Error("bug"); }, onError: () => {} });
    const seen = collect(view);
    view.start();
    await clock.runUntil(() => seen.data.length === 1, "the data");
    view.close();
  });
});

describe("View.reread (Consul lost or back)", () => {
  it("ends the read in flight and reads again from index 0 at once, without telling an error; a no-op while no read is in flight", async () => {
    const clock = fakeClock();
    // The first read answers; the blocking read after it is held (a server without a leader).
    const s = scripted([{ data: ["a"], index: 7n }, "block", { data: ["b"], index: 9n }], clock);
    const view = new View("k", s.fetch, { timing: fast, clock });
    const seen = collect(view);
    view.start();
    await clock.runUntil(() => s.calls.length === 2, "the blocking read");
    const at = clock.now();
    view.reread();
    await clock.runUntil(() => s.calls.length === 4, "the read again and the blocking read after it");
    assert.deepEqual(s.calls.map((c) => c.index), [0n, 7n, 0n, 9n]);
    assert.equal(s.calls[2]!.at, at, "read again at once");
    assert.equal(s.aborted(), 1);
    assert.deepEqual(seen.errors, [], "a cut read is no failure");
    assert.deepEqual(seen.data, [["a"], ["b"]]);
    view.close();
    await view.done();
    view.reread();
    assert.equal(s.calls.length, 4, "a closed view reads no more");
  });
});

describe("stableStringify", () => {
  it("sorts object keys at every depth and keeps array order", () => {
    assert.equal(stableStringify({ b: 1, a: { d: [2, 1], c: null } }), '{"a":{"c":null,"d":[2,1]},"b":1}');
  });
});
