import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { startDaemonApi } from "../../src/daemon/api.ts";
import { startConsul, type ConsulAgent } from "../support/consul.ts";
import { startRuntime, tempDir, waitFor, writeConfig, type TestRuntime } from "../support/cts.ts";
import { http } from "../support/api.ts";

const CTS = fileURLToPath(new URL("../../bin/cts.js", import.meta.url));
const read = (p: string) => readFile(p, "utf8").catch(() => "");
const MEMBERS = "web-1 10.0.0.1:80\n";

/**
 * Drift: infrastructure changed out of band (a task's file edited by hand) is found by the
 * scheduled plan, reported as an event, in the API and the CLI, and restored with `correct: true`.
 */
describe("drift detection (real Consul, real OpenTofu)", () => {
  let consul: ConsulAgent;
  let tmp: { dir: string; cleanup(): Promise<void> };
  let rt: TestRuntime;
  let api: { url: string; stop: () => Promise<void> };
  const file = (name: string) => join(tmp.dir, `${name}.txt`);
  const status = async (task: string) => (await http(api.url, "GET", `/v1/status/tasks/${task}?include=events`)).body[task];
  const cts = (args: string[]): Promise<{ code: number; stdout: string; stderr: string }> =>
    new Promise((resolve) => {
      execFile("node", [CTS, ...args, "--http-addr", api.url], (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }));
    });

  before(async () => {
    consul = await startConsul();
    tmp = await tempDir();
    await consul.register({ Name: "web", ID: "web-1", Address: "10.0.0.1", Port: 80 });
    const config = await writeConfig(tmp.dir, {
      consulAddress: consul.address,
      // Global: report only, every 2 s. "corrected" overrides it; "unchecked" turns it off.
      extra: `driftCheck: { every: "2s" },`,
      tasks: [
        `new MemberList("reported", ${JSON.stringify(file("reported"))})`,
        `new MemberList("corrected", ${JSON.stringify(file("corrected"))}, "web", false, { every: "2s", correct: true })`,
        `new MemberList("unchecked", ${JSON.stringify(file("unchecked"))}, "web", false, false)`,
      ],
    });
    rt = await startRuntime(config);
    api = await startDaemonApi(rt, { port: 0 }, { register: false });
    for (const t of ["reported", "corrected", "unchecked"]) await waitFor(async () => (await read(file(t))) === MEMBERS, 60_000, `the first apply of ${t}`);
    await rt.controller.idle();
  });
  after(async () => {
    await api?.stop();
    await rt?.close();
    await consul?.stop();
    await tmp?.cleanup();
  });

  it("shows drift settings in the status of tasks that check, and none for a task that turned it off", async () => {
    const reported = await status("reported");
    assert.equal(reported.drift.enabled, true);
    assert.equal(reported.drift.every, "2s");
    assert.equal(reported.drift.correct, false);
    assert.equal((await status("corrected")).drift.correct, true);
    assert.equal((await status("unchecked")).drift, undefined);
  });

  it("reports a file changed out of band as drift (event, API) and leaves it alone without correct", async () => {
    await writeFile(file("reported"), "changed by hand\n");
    const s = await waitFor(async () => {
      const st = await status("reported");
      return st.drift.status === "drifted" ? st : undefined;
    }, 60_000, "drift of 'reported' to be reported");
    assert.equal(s.status, "successful", "CTS's status is about runs; drift is its own field");
    assert.ok(s.drift.changes.add >= 1, JSON.stringify(s.drift));
    assert.match(s.drift.checked_at, /^\d{4}-\d\d-\d\dT/);
    const event = s.events.find((e: { outcome: string }) => e.outcome === "drift");
    assert.ok(event, JSON.stringify(s.events));
    assert.equal(event.success, true);
    assert.equal(event.drift.corrected, false);
    assert.ok(event.changes.add >= 1);
    assert.equal(await read(file("reported")), "changed by hand\n", "not corrected");
    const metrics = await (await fetch(`${api.url}/metrics`)).text();
    const found = /^cts_task_drift_detected_total\{task="reported"\} (\d+)/m.exec(metrics);
    assert.ok(found && Number(found[1]) >= 1, "the drift metric counts the finding");
  });

  it("restores the file with correct: true and records the correction", async () => {
    await writeFile(file("corrected"), "changed by hand\n");
    await waitFor(async () => (await read(file("corrected"))) === MEMBERS, 60_000, "the drift of 'corrected' to be corrected");
    const s = await waitFor(async () => {
      const st = await status("corrected");
      return st.drift.status === "corrected" ? st : undefined;
    }, 30_000, "the status to say corrected");
    const event = s.events.find((e: { outcome: string }) => e.outcome === "drift");
    assert.equal(event.drift.corrected, true);
    assert.ok(event.drift.applied.add >= 1, JSON.stringify(event));
  });

  it("POST /v1/tasks/{name}/drift checks now, through the task's queue slot", async () => {
    const res = await http(api.url, "POST", "/v1/tasks/reported/drift", {});
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.drift.status, "drifted");
    assert.equal(res.body.drift.changes_present, true);
    assert.match(res.body.drift.plan, /local_file\.members/);
    const clean = await http(api.url, "POST", "/v1/tasks/unchecked/drift", {});
    assert.equal(clean.status, 200, clean.text);
    assert.equal(clean.body.drift.status, "in-sync");
    assert.equal(clean.body.drift.changes_present, false);
    assert.equal((await http(api.url, "POST", "/v1/tasks/nope/drift", {})).status, 404);
    assert.equal((await http(api.url, "POST", "/v1/tasks/reported/drift", "{}", { "content-type": "text/plain" })).status, 415);
  });

  it("cts drift exits 2 on drift, 0 without, 1 on an error; cts status shows the drift", async () => {
    const drifted = await cts(["drift", "reported"]);
    assert.equal(drifted.code, 2, drifted.stdout + drifted.stderr);
    assert.match(drifted.stdout, /reported\s+drifted\s+\+1 ~0 -0/);
    const clean = await cts(["drift", "unchecked"]);
    assert.equal(clean.code, 0, clean.stdout + clean.stderr);
    assert.match(clean.stdout, /unchecked\s+in-sync/);
    const missing = await cts(["drift", "nope"]);
    assert.equal(missing.code, 1, missing.stdout + missing.stderr);
    assert.match(missing.stderr, /no task named 'nope'/);
    const st = await cts(["status"]);
    assert.equal(st.code, 0, st.stderr);
    assert.match(st.stdout, /DRIFT/);
    assert.match(st.stdout, /reported\s+successful\s+true.*drifted \(\+1 ~0 -0\) at \S+ every 2s/);
  });
});
