import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { TfcClient } from "../../src/tfc/client.ts";
import { ConfigurationVersions } from "../../src/tfc/configuration-versions.ts";
import { PollPacer } from "../../src/tfc/poll-pacer.ts";
import { Runs } from "../../src/tfc/runs.ts";
import type { Transport } from "../../src/tfc/transport.ts";
import { fakeClock, type FakeClock } from "../support/fake-clock.ts";

/** A run document with `status`. */
const runDoc = (id: string, status: string) => ({ data: { id, type: "runs", attributes: { status, actions: {}, "auto-apply": true } } });

/** A transport whose run reads answer `statusAt(now)` and record when (on the fake clock) each read came. */
function scriptedTransport(clock: FakeClock, statusAt: (ms: number) => string) {
  const reads: number[] = [];
  const t = {
    async json(opts: { path: string }) {
      reads.push(clock.now());
      return runDoc(opts.path.split("/").at(-1)!, statusAt(clock.now()));
    },
  } as unknown as Transport;
  return { t, reads };
}

describe("following a run: the adaptive poll", () => {
  it("reads at once, then 100 ms later, doubling toward the interval while the status stays; a status change polls soon again", async () => {
    const clock = fakeClock({ autoAdvance: true });
    // planning until 2 s, applying until 2.8 s, then applied.
    const { t, reads } = scriptedTransport(clock, (ms) => (ms < 2000 ? "planning" : ms < 2800 ? "applying" : "applied"));
    const seen: string[] = [];
    const run = await new Runs(t, clock).follow("run-1", { onStatus: (r) => seen.push(r.status) });
    assert.equal(run.status, "applied");
    assert.deepEqual(seen, ["planning", "applying", "applied"]);
    // 0, +100, +200, +400, +800, then the 1 s cap; applying seen at 2.5 s, then +100, +200.
    assert.deepEqual(reads, [0, 100, 300, 700, 1500, 2500, 2600, 2800]);
  });

  it("backs off to the configured interval (the cap), and never waits longer than it", async () => {
    const clock = fakeClock({ autoAdvance: true });
    const { t, reads } = scriptedTransport(clock, (ms) => (ms < 5000 ? "planning" : "planned_and_finished"));
    await new Runs(t, clock).follow("run-1", { intervalMs: 300 });
    const gaps = reads.slice(1).map((at, i) => at - reads[i]!);
    assert.deepEqual(gaps.slice(0, 4), [100, 200, 300, 300]);
    assert.ok(gaps.every((g) => g <= 300));
  });

  it("stops at the limit with TFC_RUN_TIMEOUT naming the run and its status", async () => {
    const clock = fakeClock({ autoAdvance: true });
    const { t } = scriptedTransport(clock, () => "planning");
    await assert.rejects(new Runs(t, clock).follow("run-9", { limitMs: 5_000 }), (err: any) => err.code === "TFC_RUN_TIMEOUT" && /run-9 is still 'planning'/.test(err.message));
    assert.ok(clock.now() >= 5_000);
  });

  it("a stopped follow ends at once, without another read", async () => {
    const clock = fakeClock();
    const { t, reads } = scriptedTransport(clock, () => "planning");
    const ac = new AbortController();
    const following = new Runs(t, clock).follow("run-1", { signal: ac.signal });
    await clock.runUntil(() => reads.length === 2, "two reads");
    ac.abort();
    await assert.rejects(following, { code: "TFC_CANCELLED" });
    assert.equal(reads.length, 2);
  });
});

describe("following runs: the client's pacer keeps all polls under the rate limit", () => {
  it("spaces polls that are due at once by 1/rate; a lone poll never waits", async () => {
    const clock = fakeClock({ autoAdvance: true });
    const pacer = new PollPacer(10, clock);
    const at: number[] = [];
    await Promise.all([1, 2, 3].map(() => pacer.turn().then(() => at.push(clock.now()))));
    assert.deepEqual(at, [0, 100, 200]);
    clock.advance(1_000);
    await pacer.turn();
    assert.equal(clock.now(), 1_200, "a poll after a quiet spell goes at once");
  });

  it("twenty runs followed at once make at most the pacer's rate of reads per second", async () => {
    const clock = fakeClock({ autoAdvance: true });
    const { t, reads } = scriptedTransport(clock, (ms) => (ms < 3000 ? "planning" : "applied"));
    const runs = new Runs(t, clock, new PollPacer(20, clock));
    await Promise.all(Array.from({ length: 20 }, (_, i) => runs.follow(`run-${i}`)));
    const perSecond = new Map<number, number>();
    for (const r of reads) perSecond.set(Math.floor(r / 1000), (perSecond.get(Math.floor(r / 1000)) ?? 0) + 1);
    assert.ok(Math.max(...perSecond.values()) <= 20, `reads per second: ${JSON.stringify([...perSecond])}`);
  });

  it("a 429 on a poll waits as the server asks (the client's retry path) before the next read", async () => {
    const clock = fakeClock({ autoAdvance: true });
    const hits: number[] = [];
    const server = createServer((req, res) => {
      hits.push(clock.now());
      if (hits.length === 2) {
        res.writeHead(429, { "Content-Type": "application/vnd.api+json", "Retry-After": "3" });
        res.end(JSON.stringify({ errors: [{ status: "429", title: "Too many requests" }] }));
        return;
      }
      res.writeHead(200, { "Content-Type": "application/vnd.api+json" });
      res.end(JSON.stringify(runDoc("run-1", hits.length >= 3 ? "applied" : "planning")));
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const client = new TfcClient({ hostname: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, token: "t0ken-for-the-poll-test", clock });
    try {
      const run = await client.runs.follow("run-1");
      assert.equal(run.status, "applied");
      assert.deepEqual(hits, [0, 100, 3100], "the second read was refused; the third came the 3 s Retry-After later");
    } finally {
      client.close();
      await new Promise((r) => server.close(r));
    }
  });
});

describe("waiting for an upload to be processed: on the client's clock", () => {
  /** A transport whose configuration-version reads answer `statusAt(now)` on the fake clock. */
  const uploads = (clock: FakeClock, statusAt: (ms: number) => string) => {
    const reads: number[] = [];
    const t = {
      clock,
      async json(opts: { path: string }) {
        reads.push(clock.now());
        return { data: { id: opts.path.split("/").at(-1)!, type: "configuration-versions", attributes: { status: statusAt(clock.now()) } } };
      },
    } as unknown as Transport;
    return { t, reads };
  };

  it("reads every interval until the version is uploaded", async () => {
    const clock = fakeClock({ autoAdvance: true });
    const { t, reads } = uploads(clock, (ms) => (ms < 1200 ? "pending" : "uploaded"));
    const cv = await new ConfigurationVersions(t).waitUntilUploaded("cv-1", { intervalMs: 500 });
    assert.equal(cv.status, "uploaded");
    assert.deepEqual(reads, [0, 500, 1000, 1500]);
  });

  it("gives up with TFC_UPLOAD_FAILED when the limit passes on the clock", async () => {
    const clock = fakeClock({ autoAdvance: true });
    const { t, reads } = uploads(clock, () => "pending");
    await assert.rejects(new ConfigurationVersions(t).waitUntilUploaded("cv-1", { intervalMs: 500, limitMs: 1200 }), { code: "TFC_UPLOAD_FAILED" });
    assert.deepEqual(reads, [0, 500, 1000, 1200]);
  });
});
