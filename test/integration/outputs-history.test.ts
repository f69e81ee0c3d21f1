import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { startDaemonApi } from "../../src/daemon/api.ts";
import { STATE_FOLDER } from "../../src/state/file-state.ts";
import { startConsul, type ConsulAgent } from "../support/consul.ts";
import { PUBLIC_API, startRuntime, tempDir, waitFor, type TestRuntime } from "../support/cts.ts";
import { http } from "../support/api.ts";
import { tools } from "../support/tools.ts";
import { POOL_TOKEN } from "../fixtures/output-tasks.ts";

const CTS = fileURLToPath(new URL("../../bin/cts.js", import.meta.url));
const OUTPUT_TASKS = fileURLToPath(new URL("../fixtures/output-tasks.ts", import.meta.url));
const read = (p: string) => readFile(p, "utf8").catch(() => "");
const KEEP = 4;

/** A cts.config.ts with one PoolOutputs task and a run history of KEEP runs. */
async function writeOutputsConfig(dir: string, consulAddress: string, out: string): Promise<string> {
  const t = tools();
  const file = join(dir, "cts.config.ts");
  await writeFile(
    file,
    `import { defineConfig } from ${JSON.stringify(PUBLIC_API)};
import { PoolOutputs } from ${JSON.stringify(OUTPUT_TASKS)};
export default defineConfig({
  consul: { address: ${JSON.stringify(consulAddress)} },
  driver: { terraform: { binary: ${JSON.stringify(t.tofu)}, cliConfigFile: ${JSON.stringify(t.cliConfig)}, workingDir: ${JSON.stringify(join(dir, "sync-tasks"))}, log: true } },
  api: { port: 0 },
  history: { keep: ${KEEP} },
  tasks: [new PoolOutputs("pool", ${JSON.stringify(out)})],
});
`,
  );
  return file;
}

/**
 * CTS #1046 (outputs) and run history: a task's Terraform outputs after each apply, in the status,
 * events, the outputs route, the CLI and the dashboard's state, the sensitive one redacted
 * everywhere; every run kept with what started it and what it changed, paged, pruned, and both
 * kept across a restart.
 */
describe("task outputs and run history (real Consul, real OpenTofu)", () => {
  let consul: ConsulAgent;
  let tmp: { dir: string; cleanup(): Promise<void> };
  let rt: TestRuntime | undefined;
  let api: { url: string; stop: () => Promise<void> } | undefined;
  let config: string;
  let out: string;
  const get = async (path: string) => http(api!.url, "GET", path);
  const status = async () => (await get("/v1/status/tasks/pool?include=events")).body.pool;
  const cts = (args: string[]): Promise<{ code: number; stdout: string; stderr: string }> =>
    new Promise((resolve) => {
      execFile("node", [CTS, ...args, "--http-addr", api!.url], (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }));
    });

  before(async () => {
    consul = await startConsul();
    tmp = await tempDir("cts-outputs-");
    out = join(tmp.dir, "pool.txt");
    await consul.register({ Name: "web", ID: "web-1", Address: "10.0.0.1", Port: 80 });
    config = await writeOutputsConfig(tmp.dir, consul.address, out);
    rt = await startRuntime(config);
    api = await startDaemonApi(rt, { port: 0 }, { register: false });
    await waitFor(async () => (await read(out)) === "web-1 10.0.0.1:80\n", 60_000, "the first apply");
    await waitFor(async () => (await status())?.outputs, 30_000, "the first apply's outputs");
  });
  after(async () => {
    await api?.stop();
    await rt?.close();
    await consul?.stop();
    await tmp?.cleanup();
  });

  it("shows the last apply's outputs in the task's status, with the sensitive one redacted", async () => {
    const s = await status();
    assert.equal(s.status, "successful");
    assert.match(s.outputs.updated_at, /^\d{4}-\d\d-\d\dT/);
    assert.deepEqual(s.outputs.values.member_count, { value: 1, type: "number", sensitive: false });
    assert.deepEqual(s.outputs.values.member_ids.value, ["web-1"]);
    assert.equal(s.outputs.values.file_id.sensitive, false);
    assert.deepEqual(s.outputs.values.api_token, { value: "(sensitive)", type: "string", sensitive: true });
    // The rest of the answer is CTS's shape, as before.
    assert.equal(s.task_name, "pool");
    assert.equal(s.events_url, "/v1/status/tasks/pool?include=events");
  });

  it("puts the outputs in the apply's event, and behind GET /v1/tasks/{name}/outputs", async () => {
    const [newest] = (await status()).events;
    assert.equal(newest.outcome, "applied");
    assert.equal(newest.outputs.member_count.value, 1);
    assert.equal(newest.outputs.api_token.value, "(sensitive)");
    const res = await get("/v1/tasks/pool/outputs");
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.outputs.values.member_count.value, 1);
    assert.equal(res.body.outputs.values.api_token.sensitive, true);
    assert.equal((await get("/v1/tasks/nope/outputs")).status, 404);
  });

  it("reads the outputs again after each apply", async () => {
    await consul.register({ Name: "web", ID: "web-2", Address: "10.0.0.2", Port: 80 });
    const s = await waitFor(async () => {
      const st = await status();
      return st.outputs.values.member_count.value === 2 ? st : undefined;
    }, 60_000, "the outputs of the second apply");
    assert.deepEqual(s.outputs.values.member_ids.value, ["web-1", "web-2"]);
    assert.equal(await read(out), "web-1 10.0.0.1:80\nweb-2 10.0.0.2:80\n");
  });

  it("keeps each run with its trigger, inputs digest, plan by address, outcome and duration", async () => {
    const res = await get("/v1/tasks/pool/runs");
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.task, "pool");
    const [second, first] = res.body.runs;
    assert.equal(res.body.total, 2);
    assert.equal(first.trigger, "start");
    assert.equal(second.trigger, "change");
    for (const r of [first, second]) {
      assert.equal(r.outcome, "applied");
      assert.equal(r.success, true);
      assert.match(r.inputs_digest, /^[0-9a-f]{64}$/);
      assert.ok(r.duration_ms >= 0 && Date.parse(r.end_time) >= Date.parse(r.start_time));
    }
    assert.notEqual(first.inputs_digest, second.inputs_digest, "other inputs, another digest");
    assert.deepEqual(first.plan.changes, { add: 1, change: 0, destroy: 0 });
    assert.deepEqual(first.plan.resources, [{ address: "local_file.members", action: "create" }]);
    assert.deepEqual(second.plan.resources, [{ address: "local_file.members", action: "replace" }]);
  });

  it("pages the history newest first with limit and before, and prunes it to the retention", async () => {
    // Forced runs through the API: each is a run (an apply of the same inputs), kept with trigger "api".
    for (let i = 0; i < 4; i++) {
      const run = await http(api!.url, "PATCH", "/v1/tasks/pool?run=now&force=true", { enabled: true });
      assert.equal(run.status, 200, run.text);
    }
    const all = (await get(`/v1/tasks/pool/runs?limit=100`)).body;
    assert.equal(all.total, KEEP, "history: { keep: 4 } keeps the newest 4");
    assert.deepEqual(all.runs.map((r: { trigger: string }) => r.trigger), ["api", "api", "api", "api"]);
    const seen: string[] = [];
    let page = (await get("/v1/tasks/pool/runs?limit=3")).body;
    seen.push(...page.runs.map((r: { id: string }) => r.id));
    assert.equal(page.runs.length, 3);
    assert.equal(page.next_url, `/v1/tasks/pool/runs?limit=3&before=${page.next}`);
    page = (await get(page.next_url)).body;
    seen.push(...page.runs.map((r: { id: string }) => r.id));
    assert.equal(page.next, undefined, "the last page has no next");
    assert.deepEqual(seen, all.runs.map((r: { id: string }) => r.id));
  });

  it("answers 400 with the fix for a bad page request", async () => {
    for (const [query, message] of [
      ["limit=0", /not a whole number from 1 to 100/],
      ["limit=101", /not a whole number from 1 to 100/],
      ["limit=ten", /not a whole number from 1 to 100/],
      ["before=yesterday", /is not a run id/],
      ["before=20200101T000000000Z-00000000", /names no run kept of task 'pool'/],
      ["page=2", /unknown query parameter 'page'.*limit, before/],
      ["limit=1&limit=2", /given 2 times/],
    ] as const) {
      const res = await get(`/v1/tasks/pool/runs?${query}`);
      assert.equal(res.status, 400, `${query}: ${res.text}`);
      assert.match(res.body.error.message, message, query);
    }
    assert.equal((await get("/v1/tasks/nope/runs")).status, 404);
  });

  it("cts task outputs, cts status and cts history print them, without the sensitive value", async () => {
    const outputs = await cts(["task", "outputs", "pool"]);
    assert.equal(outputs.code, 0, outputs.stderr);
    assert.match(outputs.stdout, /member_count\s+2\s+no/);
    assert.match(outputs.stdout, /api_token\s+\(sensitive\)\s+yes/);
    const status = await cts(["status", "pool"]);
    assert.equal(status.code, 0, status.stderr);
    assert.match(status.stdout, /==> pool: outputs of /);
    assert.match(status.stdout, /member_ids\s+\["web-1","web-2"\]/);
    const history = await cts(["history", "pool", "--limit", "2", "--resources"]);
    assert.equal(history.code, 0, history.stderr);
    assert.match(history.stdout, /RUN\s+STARTED\s+TRIGGER\s+OUTCOME\s+CHANGES\s+DURATION\s+INPUTS/);
    assert.match(history.stdout, /api\s+applied\s+\+0 ~0 -0/);
    assert.match(history.stdout, /Older runs: cts history pool --before \d{8}T\d{9}Z-[0-9a-f]{8}/);
    const json = JSON.parse((await cts(["history", "pool", "--all", "--json"])).stdout);
    assert.equal(json.runs.length, KEEP);
    for (const r of [outputs, status, history]) assert.ok(!r.stdout.includes(POOL_TOKEN));
  });

  it("never shows the sensitive value: not in the API, the dashboard's state or the kept files", async () => {
    for (const path of ["/v1/status/tasks?include=events", "/v1/tasks/pool/outputs", "/v1/tasks/pool/runs?limit=100", "/ui/state"]) {
      const res = await get(path);
      assert.equal(res.status, 200, `${path}: ${res.text}`);
      assert.ok(!res.text.includes(POOL_TOKEN), path);
    }
    const ui = (await get("/ui/state")).body.tasks.find((t: { name: string }) => t.name === "pool");
    assert.equal(ui.outputs.values.api_token.value, "(sensitive)");
    assert.equal(ui.runs_kept, KEEP);
    for (const f of ["outputs.json", "runs.json"]) assert.ok(!(await read(join(tmp.dir, "sync-tasks", STATE_FOLDER, "pool", f))).includes(POOL_TOKEN), f);
    assert.ok(!rt!.lines.join("\n").includes(POOL_TOKEN), "nor in the log");
  });

  it("keeps the outputs and the history across a restart", async () => {
    const before = (await get("/v1/tasks/pool/runs?limit=100")).body.runs;
    await api!.stop();
    await rt!.close();
    api = undefined;
    // A runtime that has not run anything yet: what it shows comes from the task state's files.
    rt = await startRuntime(config, { mode: "once" });
    assert.equal(rt.controller.taskOutputs!("pool")?.outputs.member_count?.value, 2);
    assert.equal(rt.controller.taskOutputs!("pool")?.outputs.api_token?.value, "(sensitive)");
    assert.deepEqual(rt.controller.taskRuns!("pool").map((r) => r.id), before.map((r: { id: string }) => r.id));
    const [outcome] = await rt.controller.once();
    assert.equal(outcome!.ok, true, outcome!.error?.message);
    const runs = rt.controller.taskRuns!("pool");
    assert.equal(runs.length, KEEP);
    assert.equal(runs[0]!.trigger, "once");
    assert.equal(runs[1]!.id, before[0].id);
  });
});
