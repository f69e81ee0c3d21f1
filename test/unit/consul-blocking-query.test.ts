import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { CTS_BLOCKING_TIMING, followBlockingQuery, type AfterAnswer, type AfterFailure, type BlockingQuery } from "../../src/consul/blocking-query.ts";
import { fakeClock } from "../support/fake-clock.ts";

type Step = { index: bigint; data?: string } | { error: Error } | "block";

/** A scripted owner: answers in order, then blocks until aborted; records what the loop did. */
class Script implements BlockingQuery<{ index: bigint; data?: string }> {
  readonly reads: bigint[] = [];
  readonly told: string[] = [];
  readonly failures: number[] = [];
  resets = 0;
  wentBack = 0;
  constructor(
    private readonly steps: Step[],
    private readonly onAnswer: (data: string | undefined) => AfterAnswer | Promise<AfterAnswer> = () => undefined,
    private readonly onFailure: (failures: number) => AfterFailure = () => undefined,
    private readonly whenDone?: () => void,
  ) {}
  read(index: bigint, signal: AbortSignal): Promise<{ index: bigint; data?: string }> {
    this.reads.push(index);
    const step = this.steps.shift() ?? "block";
    if (step === "block") {
      const blocked = new Promise<never>((_r, reject) => signal.addEventListener("abort", () => reject(Object.assign(new Error("aborted"), { name: "AbortError" }))));
      this.whenDone?.();
      return blocked;
    }
    return "error" in step ? Promise.reject(step.error) : Promise.resolve(step);
  }
  answered(a: { index: bigint; data?: string }): AfterAnswer | Promise<AfterAnswer> {
    this.told.push(a.data ?? "");
    return this.onAnswer(a.data);
  }
  failed(_err: unknown, failures: number): AfterFailure {
    this.failures.push(failures);
    return this.onFailure(failures);
  }
  indexReset(): void {
    this.resets++;
  }
  indexWentBack(): void {
    this.wentBack++;
  }
}

/**
 * Runs the loop (CTS's pacing and backoff, on a fake clock that jumps to each timer: no real time
 * passes) until the script is used up (its next read blocks), then stops it.
 */
async function run(make: (done: () => void) => Script): Promise<Script> {
  const ac = new AbortController();
  const script = make(() => ac.abort());
  await followBlockingQuery(script, ac.signal, CTS_BLOCKING_TIMING, Math.random, fakeClock({ autoAdvance: true }));
  return script;
}

describe("the blocking-query loop", () => {
  it("tells its owner when Consul answers below the index it held (a restarted agent), also across failed reads, and not after a blip", async () => {
    const direct = await run((done) => new Script([{ index: 50n, data: "a" }, { index: 7n, data: "a" }], undefined, undefined, done));
    assert.equal(direct.wentBack, 1);
    const acrossFailure = await run((done) => new Script([{ index: 50n, data: "a" }, { error: new Error("ECONNRESET") }, { error: new Error("ECONNREFUSED") }, { index: 7n, data: "a" }], undefined, undefined, done));
    assert.equal(acrossFailure.wentBack, 1, "the agent restarted while reads failed: its index is lower than before");
    const blip = await run((done) => new Script([{ index: 50n, data: "a" }, { error: new Error("ECONNRESET") }, { index: 50n, data: "a" }, { index: 51n, data: "b" }], undefined, undefined, done));
    assert.equal(blip.wentBack, 0, "the same agent after a failed read: nothing went back");
  });

  it("reads at index 0 first, then blocks on the last index; the same index is not an answer", async () => {
    const s = await run((done) => new Script([{ index: 5n, data: "a" }, { index: 5n, data: "a" }, { index: 6n, data: "b" }], undefined, undefined, done));
    assert.deepEqual(s.reads, [0n, 5n, 5n, 6n]);
    assert.deepEqual(s.told, ["a", "b"]);
  });

  it("starts over at index 0 when the index goes backwards, without telling the stale answer", async () => {
    const s = await run((done) => new Script([{ index: 50n, data: "a" }, { index: 3n, data: "stale" }, { index: 4n, data: "b" }], undefined, undefined, done));
    assert.deepEqual(s.reads, [0n, 50n, 0n, 4n]);
    assert.deepEqual(s.told, ["a", "b"]);
    assert.equal(s.resets, 1);
  });

  it("takes an index of 0 as 1, so the next read still blocks", async () => {
    const s = await run((done) => new Script([{ index: 0n, data: "a" }], undefined, undefined, done));
    assert.deepEqual(s.reads, [0n, 1n]);
  });

  it("after a failure (an HTTP 500, a refused connection) starts over at index 0 and counts consecutive failures", async () => {
    const down = new Error("HTTP 500");
    const s = await run((done) => new Script([{ index: 9n, data: "a" }, { error: down }, { error: down }, { index: 10n, data: "b" }, { error: down }], undefined, undefined, done));
    assert.deepEqual(s.reads, [0n, 9n, 0n, 0n, 10n, 0n]);
    assert.deepEqual(s.failures, [1, 2, 1]);
    assert.deepEqual(s.told, ["a", "b"]);
  });

  it("paces reads 100 ms + jitter apart, and backs off from 250 ms, doubling per failure (CTS's timing, exact on a fake clock)", async () => {
    const clock = fakeClock({ autoAdvance: true });
    const ac = new AbortController();
    const down = new Error("HTTP 500");
    const s = new Script([{ index: 1n, data: "a" }, { index: 2n, data: "b" }, { error: down }, { error: down }, { error: down }, { index: 3n, data: "c" }], undefined, undefined, () => ac.abort());
    const at: number[] = [];
    const read = s.read.bind(s);
    s.read = (index, signal) => {
      at.push(clock.now());
      return read(index, signal);
    };
    // random() = 1: the full jitter (20 ms) between reads, and the full backoff (250, 500, 1000 ms).
    await followBlockingQuery(s, ac.signal, CTS_BLOCKING_TIMING, () => 1, clock);
    assert.deepEqual(s.reads, [0n, 1n, 2n, 0n, 0n, 0n, 3n]);
    assert.deepEqual(at, [0, 120, 240, 490, 990, 1990, 2110]);
  });

  it("ends when the owner says stop after a failure", async () => {
    const ac = new AbortController();
    const s = new Script([{ error: new Error("refused") }, { index: 1n, data: "never" }], undefined, () => "stop");
    await followBlockingQuery(s, ac.signal, CTS_BLOCKING_TIMING, Math.random, fakeClock({ autoAdvance: true }));
    assert.equal(ac.signal.aborted, false, "it ended by itself");
    assert.deepEqual(s.reads, [0n]);
  });

  it("keeps going after an abort error that is not its own signal's (a read given up by a socket or a library)", async () => {
    const foreign = Object.assign(new Error("request aborted"), { name: "AbortError", isAbort: true });
    const s = await run((done) => new Script([{ index: 3n, data: "a" }, { error: foreign }, { index: 4n, data: "b" }], undefined, undefined, done));
    assert.deepEqual(s.failures, [1], "counted as a failed read");
    assert.deepEqual(s.reads, [0n, 3n, 0n, 4n], "read again from index 0 after the backoff");
    assert.deepEqual(s.told, ["a", "b"]);
  });

  it("treats an error thrown by the owner's answer handling as a failed read", async () => {
    let first = true;
    const s = await run(
      (done) =>
        new Script(
          [{ index: 3n, data: "a" }, { index: 4n, data: "b" }],
          () => {
            if (first) {
              first = false;
              throw new Error("acquire failed");
            }
          },
          undefined,
          done,
        ),
    );
    assert.deepEqual(s.reads, [0n, 0n, 4n]);
    assert.deepEqual(s.failures, [1]);
  });

  it("starts over at index 0 when the owner asks for it after an answer (lost a race for a lock)", async () => {
    let n = 0;
    const s = await run((done) => new Script([{ index: 3n, data: "a" }, { index: 3n, data: "a" }], () => (n++ === 0 ? { restartAfterMs: 1 } : undefined), undefined, done));
    assert.deepEqual(s.reads, [0n, 0n, 3n]);
  });

  it("waits for an owner whose answer handling is asynchronous before reading again", async () => {
    const order: string[] = [];
    const s = await run(
      (done) =>
        new Script(
          [{ index: 3n, data: "a" }],
          async () => {
            order.push("handling");
            await new Promise((r) => setImmediate(r));
            order.push("handled");
          },
          undefined,
          () => {
            order.push("read again");
            done();
          },
        ),
    );
    assert.deepEqual(order, ["handling", "handled", "read again"]);
    assert.deepEqual(s.reads, [0n, 3n]);
  });

  it("ends a read in flight and any backoff wait when the signal aborts", { timeout: 60_000 }, async () => {
    const ac = new AbortController();
    const s = new Script([{ error: new Error("down") }], undefined, () => {
      queueMicrotask(() => ac.abort());
      return 3_600_000;
    });
    // A clock that never moves by itself: only the abort can end the hour's wait.
    await followBlockingQuery(s, ac.signal, CTS_BLOCKING_TIMING, Math.random, fakeClock());
    assert.deepEqual(s.reads, [0n]);
  });
});
