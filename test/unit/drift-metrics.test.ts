import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { createController } from "../../src/daemon/compose.ts";
import { createLogger } from "../../src/log/logger.ts";
import { createPrometheusMetrics } from "../../src/metrics/prometheus.ts";
import { inProcessSynthesizer } from "../../src/synth/synthesizer.ts";
import type { RunResult } from "../../src/terraform/types.ts";
import { fakeWatcher } from "../support/fake-watcher.ts";
import { MemberList } from "../fixtures/tasks.ts";

type Prom = ReturnType<typeof createPrometheusMetrics>;
async function value(m: Prom, name: string, labels: Record<string, string>): Promise<number> {
  const metric = (await m.registry.getMetricsAsJSON()).find((x) => x.name === name);
  return ((metric?.values ?? []) as Array<{ labels: Record<string, unknown>; value: number }>).filter((v) => Object.entries(labels).every(([k, x]) => v.labels[k] === x)).reduce((a, v) => a + v.value, 0);
}

describe("drift checks in the metrics (docs/observability.md)", () => {
  it("count in cts_task_drift_checks_total by result, never as a run (cts_task_runs_total{outcome=\"planned\"})", async () => {
    const task = new MemberList("members", "/tmp/m.txt", "web", false, { every: "1h" });
    let drifted = false;
    const result = (c: boolean): RunResult => ({ changesPresent: c, summary: { add: c ? 1 : 0, change: 0, destroy: 0 }, output: "" });
    const metrics = createPrometheusMetrics({ defaultMetrics: false });
    const controller = createController({
      loaded: { config: { tasks: [task] }, file: "/x/cts.config.ts", dir: "/x" },
      reader: { read: async () => [] as never },
      driver: { taskDir: (t: string) => `/nonexistent/${t}`, apply: async () => result(true), plan: async () => result(drifted), destroy: async () => result(false) },
      synthesizer: inProcessSynthesizer(() => task),
      log: createLogger({ write: () => {} }),
      watcher: fakeWatcher().watcher,
      metrics,
      retries: 0,
    });
    await controller.runNow("members");
    assert.equal((await controller.checkDrift("members")).drift?.state, "in-sync");
    drifted = true;
    assert.equal((await controller.checkDrift("members")).drift?.state, "drifted");
    assert.equal(await value(metrics, "cts_task_drift_checks_total", { task: "members", result: "in-sync" }), 1);
    assert.equal(await value(metrics, "cts_task_drift_checks_total", { task: "members", result: "drifted" }), 1);
    assert.equal(await value(metrics, "cts_task_drift_detected_total", { task: "members" }), 1);
    assert.equal(await value(metrics, "cts_task_runs_total", { task: "members", outcome: "planned" }), 0);
    assert.equal(await value(metrics, "cts_task_runs_total", { task: "members" }), 1, "the one apply is the only run");
  });
});
