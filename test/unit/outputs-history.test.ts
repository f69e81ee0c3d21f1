import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { MAX_OUTPUT_BYTES, OUTPUT_TOO_LARGE, SENSITIVE_OUTPUT, isTaskOutputs, redactOutputs } from "../../src/driver/outputs.ts";
import { UiStream } from "../../src/terraform/json-ui.ts";
import { FileTaskState, OUTPUTS_FILE, RUNS_FILE, STATE_FOLDER } from "../../src/state/file-state.ts";
import { KvTaskState, type KvWrites } from "../../src/state/kv-state.ts";
import { memoryTaskState } from "../../src/state/memory-state.ts";
import { RUN_ID, retainRuns, runId, type RunRecord } from "../../src/state/records.ts";
import { parseState } from "../../src/state/stored-state.ts";
import { historyRetention, pageOfRuns, runRecord } from "../../src/runtime/history.ts";

const HOUR = 3_600_000;
const T0 = Date.parse("2026-11-01T00:00:00.000Z");

/** A run of `task` that started `hoursAgo` before T0 + 100 h (so ids sort by start). */
function run(task: string, n: number, outcome = "applied"): RunRecord {
  const start = new Date(T0 + n * HOUR);
  return { id: runId(start), task, trigger: "change", outcome, success: outcome !== "failed", start_time: start.toISOString(), end_time: new Date(start.getTime() + 1000).toISOString(), duration_ms: 1000 };
}

/** KV writes kept in a map, as Consul would hold them. */
function fakeKv(): KvWrites & { kv: Map<string, string> } {
  const kv = new Map<string, string>();
  return {
    kv,
    set(key, value) {
      if (value === null) kv.delete(key);
      else kv.set(key, value);
    },
    flush: async () => true,
  };
}

describe("a task's outputs as cts keeps them", () => {
  it("replaces a sensitive output's value and keeps sensitive: true", () => {
    const kept = redactOutputs({ id: { value: "pool-1", type: "string", sensitive: false }, token: { value: "s3cret-value", type: "string", sensitive: true }, hidden: { sensitive: true, type: "string" } });
    assert.deepEqual(kept.id, { value: "pool-1", type: "string", sensitive: false });
    assert.deepEqual(kept.token, { value: SENSITIVE_OUTPUT, type: "string", sensitive: true });
    assert.deepEqual(kept.hidden, { value: SENSITIVE_OUTPUT, type: "string", sensitive: true });
    assert.doesNotMatch(JSON.stringify(kept), /s3cret-value/);
  });

  it("reads Terraform Cloud's list of state version outputs the same way", () => {
    const kept = redactOutputs([{ name: "n", value: 3, sensitive: false }, { name: "t", value: null, sensitive: true }]);
    assert.deepEqual(kept, { n: { value: 3, sensitive: false }, t: { value: SENSITIVE_OUTPUT, sensitive: true } });
  });

  it("marks a value too large to keep as truncated, and drops what is not an output", () => {
    const kept = redactOutputs({ big: { value: "x".repeat(MAX_OUTPUT_BYTES + 1), sensitive: false }, "bad name": { value: 1, sensitive: false }, odd: "not an object" });
    assert.deepEqual(kept, { big: { value: OUTPUT_TOO_LARGE, sensitive: false, truncated: true } });
  });

  it("refuses a stored record that carries a sensitive value (a file or KV entry written by someone else)", () => {
    assert.equal(isTaskOutputs({ t: { value: "leaked", sensitive: true } }), false);
    assert.equal(isTaskOutputs({ t: { value: SENSITIVE_OUTPUT, sensitive: true } }), true);
  });

  it("takes an apply's outputs from the last `outputs` message of Terraform's JSON stream", () => {
    const stream = new UiStream();
    stream.push(JSON.stringify({ "@message": "Apply complete!", type: "change_summary", changes: { add: 1, change: 0, remove: 0, operation: "apply" } }));
    const shown = stream.push(JSON.stringify({ "@message": "Outputs: 2", type: "outputs", outputs: { a: { sensitive: false, type: "number", value: 2 }, s: { sensitive: true, type: "string" } } }));
    assert.deepEqual(shown, ["Outputs: 2"], "the human line names the count, never a value");
    assert.deepEqual(redactOutputs(stream.outputs), { a: { value: 2, type: "number", sensitive: false }, s: { value: SENSITIVE_OUTPUT, type: "string", sensitive: true } });
  });
});

describe("a task's run history", () => {
  it("keeps the newest runs up to `keep`, and none older than `maxAge`", () => {
    const runs = [5, 4, 3, 2, 1].map((n) => run("web", n));
    const byCount = retainRuns(runs, { keep: 3, maxAgeMs: 1000 * HOUR }, T0 + 6 * HOUR);
    assert.deepEqual(byCount.kept.map((r) => r.id), runs.slice(0, 3).map((r) => r.id));
    assert.deepEqual(byCount.dropped, runs.slice(3).map((r) => r.id));
    const byAge = retainRuns(runs, { keep: 100, maxAgeMs: 2.5 * HOUR }, T0 + 6 * HOUR);
    assert.deepEqual(byAge.kept.map((r) => r.id), runs.slice(0, 2).map((r) => r.id), "runs 3 h and more before now are dropped");
  });

  it("defaults to 50 runs and 30 days; the config overrides either", () => {
    assert.deepEqual(historyRetention(undefined), { keep: 50, maxAgeMs: 720 * HOUR });
    assert.deepEqual(historyRetention({ keep: 5 }), { keep: 5, maxAgeMs: 720 * HOUR });
    assert.deepEqual(historyRetention({ maxAge: "2h" }), { keep: 50, maxAgeMs: 2 * HOUR });
  });

  it("pages newest first with a cursor, and refuses a cursor it does not keep", () => {
    const runs = [7, 6, 5, 4, 3, 2, 1].map((n) => run("web", n));
    const first = pageOfRuns(runs, 3)!;
    assert.deepEqual(first.runs.map((r) => r.id), runs.slice(0, 3).map((r) => r.id));
    assert.equal(first.next, runs[2]!.id);
    assert.equal(first.total, 7);
    const second = pageOfRuns(runs, 3, first.next)!;
    assert.deepEqual(second.runs.map((r) => r.id), runs.slice(3, 6).map((r) => r.id));
    const last = pageOfRuns(runs, 3, second.next)!;
    assert.deepEqual(last.runs.map((r) => r.id), [runs[6]!.id]);
    assert.equal(last.next, undefined, "the last page has no next");
    assert.equal(pageOfRuns(runs, 3, runId(new Date(T0))), undefined);
  });

  it("records what a run did: trigger, outcome, inputs digest, plan with addresses, duration, run URL", () => {
    const start = new Date(T0);
    const r = runRecord("web", "api", start, new Date(T0 + 2500), {
      task: "web",
      ok: true,
      outcome: "applied",
      synth: { json: "{}", hash: "abc123" } as never,
      result: { changesPresent: true, summary: { add: 1, change: 0, destroy: 1 }, resources: [{ address: "local_file.members", action: "replace" }], output: "", url: "https://app.terraform.io/app/o/workspaces/w/runs/run-1" },
    });
    assert.match(r.id, RUN_ID);
    assert.equal(r.trigger, "api");
    assert.equal(r.inputs_digest, "abc123");
    assert.equal(r.duration_ms, 2500);
    assert.deepEqual(r.plan, { changes: { add: 1, change: 0, destroy: 1 }, resources: [{ address: "local_file.members", action: "replace" }] });
    assert.equal(r.run_url, "https://app.terraform.io/app/o/workspaces/w/runs/run-1");
  });
});

describe("where outputs and runs are kept", () => {
  it("a single instance keeps them in the task's state folder, and a new process reads them back", () => {
    const root = mkdtempSync(join(tmpdir(), "cts-history-"));
    try {
      const state = new FileTaskState(root);
      const outputs = redactOutputs({ n: { value: 2, sensitive: false }, t: { value: "s3cret-value", sensitive: true } });
      state.recordOutputs("web", { outputs, updatedAt: "2026-11-01T00:00:00.000Z" });
      for (const n of [1, 2, 3, 4]) state.recordRun("web", run("web", n), { keep: 3, maxAgeMs: 1000 * HOUR });
      const dir = join(root, STATE_FOLDER, "web");
      assert.doesNotMatch(readFileSync(join(dir, OUTPUTS_FILE), "utf8"), /s3cret-value/);
      assert.equal(JSON.parse(readFileSync(join(dir, RUNS_FILE), "utf8")).length, 3, "the retention prunes the file too");
      const again = new FileTaskState(root);
      assert.deepEqual(again.outputs("web")?.outputs, outputs);
      assert.deepEqual(again.runs("web").map((r) => r.id), [4, 3, 2].map((n) => state.runs("web").find((r) => r.start_time === new Date(T0 + n * HOUR).toISOString())!.id));
      again.forget("web");
      assert.equal(new FileTaskState(root).outputs("web"), undefined);
      assert.deepEqual(new FileTaskState(root).runs("web"), []);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  it("a cluster keeps them in Consul KV, one key per run, pruned by the retention; a new leader reads them back", () => {
    const writes = fakeKv();
    const prefix = "consul-terraform-sync/c/state/";
    const leader = new KvTaskState(writes, prefix, { fence: () => undefined });
    leader.recordOutputs("web", { outputs: { n: { value: 2, sensitive: false } }, updatedAt: "2026-11-01T00:00:00.000Z" });
    const runs = [1, 2, 3, 4].map((n) => run("web", n));
    for (const r of runs) leader.recordRun("web", r, { keep: 2, maxAgeMs: 1000 * HOUR });
    const runKeys = [...writes.kv.keys()].filter((k) => k.startsWith(`${prefix}runs/web/`)).sort();
    assert.deepEqual(runKeys, [runs[2]!, runs[3]!].map((r) => `${prefix}runs/web/${r.id}`), "dropped runs' keys are deleted");
    const stored = parseState(prefix, [...writes.kv].map(([key, value]) => ({ key, value })));
    assert.deepEqual(stored.problems, []);
    const next = new KvTaskState(fakeKv(), prefix, { fence: () => undefined });
    next.restore(stored, { applied: true });
    assert.deepEqual(next.outputs("web"), leader.outputs("web"));
    assert.deepEqual(next.runs("web").map((r) => r.id), [runs[3]!.id, runs[2]!.id], "newest first");
  });

  it("a follower (no right to write) keeps them in memory only", () => {
    const writes = fakeKv();
    const follower = new KvTaskState(writes, "p/", { fence: () => null });
    follower.recordRun("web", run("web", 1), { keep: 5, maxAgeMs: 1000 * HOUR });
    follower.recordOutputs("web", { outputs: {}, updatedAt: "2026-11-01T00:00:00.000Z" });
    assert.equal(writes.kv.size, 0);
    assert.equal(follower.runs("web").length, 1);
  });

  it("a stored run under another task's key, or with another id, is set aside", () => {
    const r = run("web", 1);
    const stored = parseState("p/", [
      { key: `p/runs/web/${r.id}`, value: JSON.stringify(r) },
      { key: `p/runs/api/${r.id}`, value: JSON.stringify(r) },
      { key: `p/runs/web/${runId(new Date(T0))}`, value: JSON.stringify(r) },
      { key: "p/outputs/web", value: JSON.stringify({ outputs: { t: { value: "leaked", sensitive: true } }, updatedAt: "x" }) },
    ]);
    assert.deepEqual(stored.runs?.get("web")?.map((x) => x.id), [r.id]);
    assert.equal(stored.runs?.has("api"), false);
    assert.equal(stored.outputs?.has("web"), false);
    assert.equal(stored.problems.length, 3);
  });

  it("tests and runners without a working dir keep them in memory", () => {
    const state = memoryTaskState();
    state.recordRun("web", run("web", 1), { keep: 1, maxAgeMs: 1000 * HOUR });
    state.recordRun("web", run("web", 2), { keep: 1, maxAgeMs: 1000 * HOUR });
    assert.equal(state.runs("web").length, 1);
    state.recordOutputs("web", { outputs: {}, updatedAt: "x" });
    assert.deepEqual(state.outputs("web")?.outputs, {});
  });
});
