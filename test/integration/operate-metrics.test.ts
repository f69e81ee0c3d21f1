import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { startConsul, type ConsulAgent } from "../support/consul.ts";
import { startCtsProcess, type CtsProcess } from "../support/cts-process.ts";
import { tempDir, waitFor, writeConfig } from "../support/cts.ts";
import { parseMetrics, sampleValue as sample, type MetricFamily } from "../support/prometheus.ts";

const POLICY = fileURLToPath(new URL("../../examples/acl/cts-policy.hcl", import.meta.url));
const read = (p: string) => readFile(p, "utf8").catch(() => "");

// Labels our metrics may carry, and those of prom-client's default process metrics.
const OUR_LABELS = new Set(["task", "outcome", "phase", "status", "kind", "blocking", "result", "command", "le"]);
const DEFAULT_METRIC_LABELS = new Set(["version", "major", "minor", "patch", "space", "type", "kind", "le"]);

describe("operating a real daemon: GET /metrics and JSON logs (real Consul with ACLs, real OpenTofu)", () => {
  const management = randomUUID();
  let consul: ConsulAgent;
  let tmp: { dir: string; cleanup(): Promise<void> };
  let ctsToken: string;
  let cts: CtsProcess;
  let apiUrl: string;
  let members: string;

  const scrape = async (): Promise<{ text: string; families: MetricFamily[] }> => {
    const res = await fetch(`${apiUrl}/metrics`);
    assert.equal(res.status, 200);
    assert.match(res.headers.get("content-type") ?? "", /^text\/plain; version=0\.0\.4/);
    const text = await res.text();
    return { text, families: parseMetrics(text) };
  };

  before(async () => {
    consul = await startConsul({
      extraConfig: `acl {\n  enabled = true\n  default_policy = "deny"\n  tokens {\n    initial_management = "${management}"\n  }\n}\n`,
      headers: { "X-Consul-Token": management },
    });
    tmp = await tempDir();
    await consul.api("PUT", "/v1/acl/policy", { Name: "cts", Rules: await readFile(POLICY, "utf8") });
    ctsToken = (await consul.api("PUT", "/v1/acl/token", { Description: "cts", Policies: [{ Name: "cts" }] })).SecretID;
    // Catalog data that must never become a label: addresses, tags, meta.
    await consul.register({ Name: "web", ID: "web-1", Address: "10.77.0.1", Port: 80, Tags: ["tag-never-a-label"], Meta: { owner: "meta-never-a-label" } });
    members = join(tmp.dir, "members.txt");
    const file = await writeConfig(tmp.dir, {
      consulAddress: consul.address,
      // The later consul block (with the ACL token) wins in the object literal; logFormat is the config's way to JSON.
      extra: `consul: { address: ${JSON.stringify(consul.address)}, token: ${JSON.stringify(ctsToken)} }, logFormat: "json", bufferPeriod: false,`,
      tasks: [`new MemberList("members", ${JSON.stringify(members)})`],
    });
    cts = startCtsProcess(file, { name: "metrics-daemon" });
    const { line } = await cts.waitForLine(/"message":"api: listening on /, 60_000);
    apiUrl = String((JSON.parse(line) as { address?: string; port?: number; message: string }).message.match(/listening on (\S+)/)![1]);
    await waitFor(async () => (await read(members)).includes("web-1"), 90_000, "the first apply");
  });
  after(async () => {
    await cts?.terminate();
    await consul?.stop();
    await tmp?.cleanup();
  });

  it("serves Prometheus text that a real parser reads, with the first run, its phases and the task's state", async () => {
    const families = (await waitFor(async () => {
      const f = (await scrape()).families;
      return sample(f, "cts_task_runs_total", { task: "members", outcome: "applied" }) >= 1 ? f : undefined;
    }, 30_000, "the applied run in /metrics"))!;
    for (const phase of ["synthesize", "init", "apply"])
      assert.ok(sample(families, "cts_task_run_phase_duration_seconds", { task: "members", phase }) >= 1, `a ${phase} phase was timed`);
    assert.equal(sample(families, "cts_task_enabled", { task: "members" }), 1);
    assert.equal(sample(families, "cts_task_status", { task: "members", status: "successful" }), 1);
    assert.equal(sample(families, "cts_task_last_run_outcome", { task: "members", outcome: "applied" }), 1);
    // Every outcome exists from the start, so increase() sees the first drift or failure.
    for (const outcome of ["no-op", "errored", "drift"]) assert.ok(families.find((f) => f.name === "cts_task_runs_total")!.metrics.some((m) => m.labels.outcome === outcome && m.labels.task === "members"));
    assert.ok(sample(families, "cts_consul_view_fetches_total", { kind: "health" }) >= 1, "the health view fetched");
    assert.ok(sample(families, "cts_consul_requests_total", { result: "ok" }) >= 1, "the transport counted Consul calls");
    assert.ok(families.some((f) => f.name === "cts_consul_blocking_queries"), "open blocking queries are a gauge");
    // Each command was counted while it ran and is gone now (warm provider processes may stay).
    const processes = families.find((f) => f.name === "cts_terraform_processes")!.metrics;
    for (const command of ["init", "apply"]) assert.ok(processes.some((m) => m.labels.command === command), `${command} was counted`);
    for (const m of processes) if (m.labels.command !== "provider") assert.equal(Number(m.value), 0, `no ${m.labels.command} left running`);
    assert.equal(sample(families, "cts_ha_leader"), 0, "no high availability: not a leader");
    assert.equal(sample(families, "cts_run_queue_depth"), 0);
    assert.ok(families.some((f) => f.name === "process_cpu_user_seconds_total"), "default process metrics are there");
  });

  it("moves the counters when a catalog change is applied, and times change → applied", async () => {
    const before = (await scrape()).families;
    const applied = sample(before, "cts_task_runs_total", { task: "members", outcome: "applied" });
    const changes = sample(before, "cts_task_changes_total", { task: "members" });
    const latency = sample(before, "cts_task_change_to_applied_seconds", { task: "members" });
    await consul.register({ Name: "web", ID: "web-2", Address: "10.77.0.2", Port: 80 });
    await waitFor(async () => (await read(members)).includes("web-2"), 90_000, "the change to be applied");
    const after = (await waitFor(async () => {
      const f = (await scrape()).families;
      return sample(f, "cts_task_runs_total", { task: "members", outcome: "applied" }) > applied ? f : undefined;
    }, 30_000, "the applied counter to move"))!;
    assert.ok(sample(after, "cts_task_changes_total", { task: "members" }) > changes, "the change was counted");
    assert.ok(sample(after, "cts_task_change_to_applied_seconds", { task: "members" }) > latency, "change → applied was observed");
    assert.ok(sample(after, "cts_task_run_phase_duration_seconds", { task: "members", phase: "apply" }) >= 2);
  });

  it("keeps labels bounded: only task names and fixed words, never catalog data or the token", async () => {
    const { text, families } = await scrape();
    for (const f of families) {
      const allowed = f.name.startsWith("cts_") ? OUR_LABELS : DEFAULT_METRIC_LABELS;
      for (const m of f.metrics) for (const [k, v] of Object.entries(m.labels)) {
        assert.ok(allowed.has(k), `${f.name} has the label ${k}`);
        if (k === "task") assert.equal(v, "members");
      }
    }
    for (const secret of ["10.77.0.", "tag-never-a-label", "meta-never-a-label", ctsToken]) assert.ok(!text.includes(secret), `/metrics does not contain ${secret}`);
  });

  it("writes one JSON object per log line with time, level, component and message; task on task lines; no token", () => {
    const lines = cts.logs().split("\n").filter((l) => l.trim() !== "");
    assert.ok(lines.length >= 3, cts.logs());
    const records = lines.map((l) => {
      try {
        return JSON.parse(l) as Record<string, unknown>;
      } catch {
        assert.fail(`not a JSON line: ${l}`);
      }
    });
    for (const r of records) {
      assert.ok(!Number.isNaN(Date.parse(String(r.time))), `time in ${JSON.stringify(r)}`);
      assert.match(String(r.level), /^(trace|debug|info|warn|error)$/);
      assert.equal(typeof r.component, "string", `component in ${JSON.stringify(r)}`);
      assert.equal(typeof r.message, "string");
    }
    const applied = records.find((r) => r.task === "members" && /applied/.test(String(r.message)));
    assert.ok(applied, "a run's line carries the task");
    assert.equal(applied.component, "ctrl");
    assert.ok(!cts.logs().includes(ctsToken), "the ACL token is not in the logs");
  });
});
