import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { createController } from "../../src/daemon/compose.ts";
import { createLogger } from "../../src/log/logger.ts";
import { noMetrics, processLabel, viewKind } from "../../src/metrics/metrics.ts";
import { createPrometheusMetrics } from "../../src/metrics/prometheus.ts";
import { inProcessSynthesizer } from "../../src/synth/synthesizer.ts";
import type { Source, SourceData } from "../../src/consul/types.ts";
import type { Subscription, SubscriptionListener, Watcher } from "../../src/watch/types.ts";
import { View } from "../../src/watch/view.ts";
import { fakeClock } from "../support/fake-clock.ts";
import type { RunResult } from "../../src/terraform/types.ts";
import { MemberList } from "../fixtures/tasks.ts";

type Metrics = ReturnType<typeof createPrometheusMetrics>;

/** The value of a sample (histograms: the _count sample) from prom-client's own JSON view. */
async function value(m: Metrics, name: string, labels: Record<string, string> = {}): Promise<number> {
  const metric = (await m.registry.getMetricsAsJSON()).find((x) => x.name === name);
  const wanted = (l: Record<string, unknown>) => Object.entries(labels).every(([k, v]) => l[k] === v);
  let total = 0;
  for (const v of (metric?.values ?? []) as Array<{ metricName?: string; labels: Record<string, unknown>; value: number }>) {
    if (String(metric?.type) === "histogram" && v.metricName !== `${name}_count`) continue;
    if (wanted(v.labels)) total += v.value;
  }
  return total;
}

const fresh = () => createPrometheusMetrics({ defaultMetrics: false });

describe("Prometheus metrics", () => {
  it("counts runs by task and outcome, a failed run as errored and unknown outcomes as other", async () => {
    const m = fresh();
    m.runStarted("web");
    m.runFinished("web", "applied", 1);
    m.runFinished("web", "failed", 1);
    m.runFinished("web", "drift", 1);
    m.runFinished("web", "something-new", 1);
    assert.equal(await value(m, "cts_task_runs_total", { task: "web", outcome: "applied" }), 1);
    assert.equal(await value(m, "cts_task_runs_total", { task: "web", outcome: "errored" }), 1);
    assert.equal(await value(m, "cts_task_runs_total", { task: "web", outcome: "drift" }), 1);
    assert.equal(await value(m, "cts_task_runs_total", { task: "web", outcome: "other" }), 1);
    assert.equal(await value(m, "cts_task_runs_total", { task: "web", outcome: "no-op" }), 0, "every outcome exists at 0");
  });

  it("times change → applied from the first change a run took; a failed run leaves the change waiting", async () => {
    const m = fresh();
    m.taskChanged("web");
    m.taskChanged("web");
    m.runStarted("web");
    m.runFinished("web", "failed", 0.1);
    assert.equal(await value(m, "cts_task_change_to_applied_seconds", { task: "web" }), 0, "nothing applied yet");
    m.runStarted("web");
    m.runFinished("web", "applied", 0.1);
    assert.equal(await value(m, "cts_task_change_to_applied_seconds", { task: "web" }), 1, "one observation for both changes");
    m.runStarted("web");
    m.runFinished("web", "applied", 0.1);
    assert.equal(await value(m, "cts_task_change_to_applied_seconds", { task: "web" }), 1, "a run without a change is not a latency");
    assert.equal(await value(m, "cts_task_changes_total", { task: "web" }), 2);
  });

  it("gives runs of unregistered tasks (an API dry run's throwaway name) no series", async () => {
    const m = fresh();
    m.observe({ tasks: () => [{ task: "web", enabled: true, status: "unknown" }], has: (t) => t === "web", queue: () => ({ waiting: 0, running: 0 }) });
    for (const task of ["web", "dry-run-4711"]) {
      m.runStarted(task);
      m.phase(task, "plan", 1);
      m.runFinished(task, "planned", 1);
    }
    const text = (await m.scrape()).body;
    assert.match(text, /task="web"/);
    assert.doesNotMatch(text, /dry-run-4711/);
  });

  it("keeps one registry per daemon, so two daemons in one process do not clash", async () => {
    const a = fresh();
    const b = createPrometheusMetrics();
    a.runFinished("x", "applied", 1);
    assert.equal(await value(a, "cts_task_runs_total", { task: "x" }), 1);
    assert.equal(await value(b, "cts_task_runs_total", { task: "x" }), 0);
    assert.match((await b.scrape()).body, /process_cpu_user_seconds_total/);
    assert.doesNotMatch((await a.scrape()).body, /process_cpu_user_seconds_total/);
  });

  it("counts leadership changes, not repeated reports of the same role", async () => {
    const m = fresh();
    m.leadership(false);
    m.leadership(true);
    m.leadership(true);
    assert.equal(await value(m, "cts_ha_leader"), 1);
    m.leadership(false);
    assert.equal(await value(m, "cts_ha_leader"), 0);
    assert.equal(await value(m, "cts_ha_leadership_changes_total"), 2);
  });

  it("labels views and processes with fixed words only, never the query", () => {
    assert.equal(viewKind('health:{"service":"web","tag":"10.0.0.1"}'), "health");
    assert.equal(viewKind("kv:secret/path"), "kv");
    assert.equal(viewKind("weird"), "other");
    assert.equal(processLabel("tofu init"), "init");
    assert.equal(processLabel("/usr/bin/terraform apply -destroy"), "apply");
    assert.equal(processLabel("terraform-provider-local_v2 -debug"), "provider");
    assert.equal(processLabel("tofu something-else"), "other");
  });

  it("the no-op metrics serve nothing", async () => {
    noMetrics.runFinished("x", "applied", 1);
    assert.equal((await noMetrics.scrape()).body, "");
  });
});

describe("metrics from the parts", () => {
  it("a view counts fetches, open blocking queries and an index that went backwards", async () => {
    const m = fresh();
    const clock = fakeClock();
    const indexes = [5n, 7n, 3n, 4n];
    let calls = 0;
    let release!: () => void;
    const view = new View<string>(
      "health:web",
      async ({ signal }) => {
        const i = indexes[calls++];
        if (i === undefined) await new Promise<void>((r) => ((release = r), signal.addEventListener("abort", () => r())));
        return { data: `d${calls}`, index: i ?? 9n };
      },
      { timing: { minIntervalMs: 1, jitterMs: 0 }, metrics: m, clock },
    );
    view.start();
    await clock.runUntil(() => calls === 5, "the fifth fetch");
    assert.equal(await value(m, "cts_consul_blocking_queries", { kind: "health" }), 1, "the fifth fetch (index 4, after the reset) waits on Consul");
    assert.equal(await value(m, "cts_consul_view_fetches_total", { kind: "health" }), 4);
    assert.equal(await value(m, "cts_consul_view_index_resets_total", { kind: "health" }), 1);
    release();
    view.close();
    await view.done();
    assert.equal(await value(m, "cts_consul_blocking_queries", { kind: "health" }), 0, "closed: no query left open");
  });

  it("a controller reports runs, phases, changes, buffer waits and its task gauges", async () => {
    const m = fresh();
    const clock = fakeClock();
    const task = new MemberList("members", "/tmp/m.txt", "web", { min: "20ms", max: "100ms" });
    let data: SourceData = [];
    const listeners: SubscriptionListener[] = [];
    const watcher: Watcher = {
      subscribe<S extends Source>(_s: S, l: SubscriptionListener): Subscription<S> {
        listeners.push(l);
        return { ready: Promise.resolve(), current: () => data as never, close: () => listeners.splice(listeners.indexOf(l), 1) };
      },
      viewCount: () => 1,
      close() {},
    };
    const ok: RunResult = { changesPresent: true, summary: { add: 1, change: 0, destroy: 0 }, output: "" };
    const controller = createController({
      loaded: { config: { tasks: [task] }, file: "/x/cts.config.ts", dir: "/x" },
      reader: { read: async () => [] as never },
      driver: { taskDir: (t: string) => `/nonexistent/${t}`, apply: async () => ok, plan: async () => ok, destroy: async () => ok },
      synthesizer: inProcessSynthesizer(() => task),
      log: createLogger({ write: () => {} }),
      watcher,
      retries: 0,
      metrics: m,
      clock,
    });
    await controller.watch();
    await controller.whenIdle();
    data = [{ id: "a", name: "web", kind: "", address: "10.0.0.1", port: 80, meta: {}, tags: [], namespace: "", status: "passing", node: "n", nodeId: "", nodeAddress: "", nodeDatacenter: "", nodeTaggedAddresses: {}, nodeMeta: {}, ctsUserDefinedMeta: {} }] as never;
    for (const l of [...listeners]) l.onChange();
    assert.equal(clock.pending(), 1, "the change waits in its buffer period");
    clock.advance(20);
    await controller.whenIdle();
    assert.equal(await value(m, "cts_task_runs_total", { task: "members", outcome: "applied" }), 2);
    assert.equal(await value(m, "cts_task_run_phase_duration_seconds", { task: "members", phase: "synthesize" }), 2);
    assert.equal(await value(m, "cts_task_changes_total", { task: "members" }), 1);
    assert.equal(await value(m, "cts_task_buffer_wait_seconds", { task: "members" }), 1);
    assert.equal(await value(m, "cts_task_change_to_applied_seconds", { task: "members" }), 1);
    assert.equal(await value(m, "cts_task_enabled", { task: "members" }), 1);
    assert.equal(await value(m, "cts_task_status", { task: "members", status: "successful" }), 1);
    assert.equal(await value(m, "cts_task_last_run_outcome", { task: "members", outcome: "applied" }), 1);
    assert.equal(await value(m, "cts_run_queue_depth"), 0);
    await controller.setEnabled("members", false);
    assert.equal(await value(m, "cts_task_enabled", { task: "members" }), 0);
    await controller.stop(100);
  });
});
