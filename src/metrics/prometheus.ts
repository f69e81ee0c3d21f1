import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from "prom-client";
import type { Metrics, RunPhase, StateProbe } from "./metrics.ts";
import { processLabel } from "./metrics.ts";

/** Drift check results as the metrics label them (anything else is `other`). */
export const DRIFT_RESULTS = ["in-sync", "drifted", "corrected", "failed", "not-applied", "inputs-changed", "other"] as const;

/** Run outcomes as the metrics label them; anything else is `other`, so the label set stays fixed. */
export const RUN_OUTCOMES = ["applied", "no-op", "planned", "destroyed", "errored", "cancelled", "drift", "held", "rejected", "other"] as const;

// The runtime says "failed"; the metrics say "errored", CTS's word for a failed task.
const outcomeLabel = (outcome: string): string => (outcome === "failed" ? "errored" : (RUN_OUTCOMES as readonly string[]).includes(outcome) ? outcome : "other");

const RUN_BUCKETS = [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800];
const LATENCY_BUCKETS = [0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300, 600, 1800];
const NOTIFY_BUCKETS = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
const CONSUL_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 600];

/** Metrics in their own Prometheus registry (one per daemon: several daemons in one test process do not clash). */
export function createPrometheusMetrics(opts: { defaultMetrics?: boolean } = {}): Metrics & { registry: Registry } {
  const registry = new Registry();
  const registers = [registry];
  if (opts.defaultMetrics !== false) collectDefaultMetrics({ register: registry });
  let probe: StateProbe | undefined;

  const runs = new Counter({ name: "cts_task_runs_total", help: "Finished runs of a task, by outcome.", labelNames: ["task", "outcome"], registers });
  const phases = new Histogram({ name: "cts_task_run_phase_duration_seconds", help: "Time spent in each phase of a run (synthesize, init, plan, apply, destroy).", labelNames: ["task", "phase"], buckets: RUN_BUCKETS, registers });
  const runSeconds = new Histogram({ name: "cts_task_run_duration_seconds", help: "Time of a whole run, retries included.", labelNames: ["task"], buckets: RUN_BUCKETS, registers });
  const changeToApplied = new Histogram({ name: "cts_task_change_to_applied_seconds", help: "Time from the first watched change of a task's data to the end of the run that applied it (or found nothing to apply).", labelNames: ["task"], buckets: LATENCY_BUCKETS, registers });
  const changes = new Counter({ name: "cts_task_changes_total", help: "Changes of watched data that reached a task's triggers.", labelNames: ["task"], registers });
  const drifts = new Counter({ name: "cts_task_drift_detected_total", help: "Drift checks that found changes while the task's inputs were unchanged.", labelNames: ["task"], registers });
  const driftChecks = new Counter({ name: "cts_task_drift_checks_total", help: "Drift checks of a task, by result (in-sync, drifted, corrected, failed, not-applied, inputs-changed); a check is not a run.", labelNames: ["task", "result"], registers });
  const notSaved = new Counter({ name: "cts_task_state_not_saved_total", help: "Applies that could not save their Terraform state, or lost its lock while they ran (TERRAFORM_STATE_NOT_SAVED).", labelNames: ["task"], registers });
  const outsideState = new Counter({ name: "cts_task_objects_outside_state_total", help: "Objects an apply that could not save its state had made, found outside the saved state by the next apply.", labelNames: ["task"], registers });
  const bufferWaits = new Histogram({ name: "cts_task_buffer_wait_seconds", help: "Time a buffer period held a task's changes before asking for a run.", labelNames: ["task"], buckets: LATENCY_BUCKETS, registers });
  new Gauge({
    name: "cts_task_enabled",
    help: "1 when the task is enabled, 0 when disabled.",
    labelNames: ["task"],
    registers,
    collect() {
      this.reset();
      for (const t of probe?.tasks() ?? []) this.set({ task: t.task }, t.enabled ? 1 : 0);
    },
  });
  new Gauge({
    name: "cts_task_status",
    help: "1 for the task's current CTS status (successful, errored, critical, unknown).",
    labelNames: ["task", "status"],
    registers,
    collect() {
      this.reset();
      for (const t of probe?.tasks() ?? []) this.set({ task: t.task, status: t.status }, 1);
    },
  });
  new Gauge({
    name: "cts_task_plan_held",
    help: "1 while the task holds a plan a guard refused (or that waits for approval), 0 otherwise.",
    labelNames: ["task"],
    registers,
    collect() {
      this.reset();
      for (const t of probe?.tasks() ?? []) this.set({ task: t.task }, t.held ? 1 : 0);
    },
  });
  new Gauge({
    name: "cts_task_last_run_outcome",
    help: "1 for the outcome of the task's newest run.",
    labelNames: ["task", "outcome"],
    registers,
    collect() {
      this.reset();
      for (const t of probe?.tasks() ?? []) if (t.lastOutcome) this.set({ task: t.task, outcome: outcomeLabel(t.lastOutcome) }, 1);
    },
  });
  new Gauge({
    name: "cts_consul_reachable",
    help: "1 while Consul answers this instance's calls, 0 while it cannot be reached (task statuses are then stale).",
    registers,
    collect() {
      this.set(probe?.consulReachable ? (probe.consulReachable() ? 1 : 0) : 1);
    },
  });
  new Gauge({
    name: "cts_run_queue_depth",
    help: "Runs waiting for a slot in the work queue.",
    registers,
    collect() {
      this.set(probe?.queue().waiting ?? 0);
    },
  });
  new Gauge({
    name: "cts_runs_in_progress",
    help: "Runs in progress.",
    registers,
    collect() {
      this.set(probe?.queue().running ?? 0);
    },
  });
  const viewFetches = new Counter({ name: "cts_consul_view_fetches_total", help: "Fetches of blocking-query views, by view kind (health, catalog, kv).", labelNames: ["kind"], registers });
  const viewErrors = new Counter({ name: "cts_consul_view_errors_total", help: "Failed fetches of blocking-query views.", labelNames: ["kind"], registers });
  const indexResets = new Counter({ name: "cts_consul_view_index_resets_total", help: "Times a view started over from index 0 (Consul's index went backwards, or after an error).", labelNames: ["kind"], registers });
  const viewSeconds = new Histogram({ name: "cts_consul_view_fetch_duration_seconds", help: "Time of one view fetch (a blocking one waits until data changes or the wait ends).", labelNames: ["kind", "blocking"], buckets: CONSUL_BUCKETS, registers });
  const openQueries = new Gauge({ name: "cts_consul_blocking_queries", help: "Blocking queries waiting on Consul now.", labelNames: ["kind"], registers });
  const requests = new Counter({ name: "cts_consul_requests_total", help: "HTTP calls to Consul, by result.", labelNames: ["result"], registers });
  const skippedServices = new Counter({ name: "cts_consul_skipped_services_total", help: "Services left out of a task's input because Consul cannot serve their health (a name its HTTP API refuses), once per task and service.", labelNames: ["task"], registers });
  const requestSeconds = new Histogram({ name: "cts_consul_request_duration_seconds", help: "Time of one HTTP call to Consul.", labelNames: ["blocking"], buckets: CONSUL_BUCKETS, registers });
  const hungCommands = new Counter({ name: "cts_terraform_hung_commands_total", help: "Terraform commands killed as hung (no exit within their limit, or silent past commandTimeouts.silence).", labelNames: ["command"], registers });
  const processes = new Gauge({ name: "cts_terraform_processes", help: "Terraform processes (and warm provider processes) running now, by command.", labelNames: ["command"], registers });
  const leader = new Gauge({ name: "cts_ha_leader", help: "1 while this instance is the high-availability leader.", registers });
  const leaderChanges = new Counter({ name: "cts_ha_leadership_changes_total", help: "Times this instance became or stopped being the leader.", registers });
  const notifications = {
    delivered: new Counter({ name: "cts_notifications_delivered_total", help: "Notifications a webhook accepted (a 2xx answer), by webhook and kind.", labelNames: ["webhook", "kind"], registers }),
    failed: new Counter({ name: "cts_notifications_failed_total", help: "Notifications given up after their retries (or refused by a 4xx answer), by webhook and kind.", labelNames: ["webhook", "kind"], registers }),
    dropped: new Counter({ name: "cts_notifications_dropped_total", help: "Notifications dropped unsent: the webhook's queue was full, or cts stopped.", labelNames: ["webhook", "kind"], registers }),
  };
  const notifySeconds = new Histogram({ name: "cts_notification_attempt_duration_seconds", help: "Time of one attempt to deliver a notification, by result (ok, error, timeout).", labelNames: ["webhook", "result"], buckets: NOTIFY_BUCKETS, registers });

  // change → applied: the first change not yet taken by a run, and the one a running run took.
  const pendingSince = new Map<string, number>();
  const takenSince = new Map<string, number>();
  const known = new Set<string>();
  let leading = false;
  // Task labels only for registered tasks: an API dry run's name is the caller's choice, and
  // series for every such name would grow without bound.
  const tracked = (task: string) => probe === undefined || probe.has(task);
  const know = (task: string) => {
    if (known.has(task)) return;
    known.add(task);
    // Every outcome starts at 0, so rate() and increase() see the first run of each.
    for (const outcome of RUN_OUTCOMES) runs.inc({ task, outcome }, 0);
    for (const result of DRIFT_RESULTS) driftChecks.inc({ task, result }, 0);
  };

  return {
    registry,
    taskChanged(task) {
      if (!tracked(task)) return;
      know(task);
      changes.inc({ task });
      if (!pendingSince.has(task)) pendingSince.set(task, Date.now());
    },
    runStarted(task) {
      if (!tracked(task)) return;
      know(task);
      const since = pendingSince.get(task);
      pendingSince.delete(task);
      if (since !== undefined) takenSince.set(task, since);
    },
    runFinished(task, outcome, seconds) {
      if (!tracked(task)) return;
      know(task);
      runs.inc({ task, outcome: outcomeLabel(outcome) });
      runSeconds.observe({ task }, seconds);
      const since = takenSince.get(task);
      takenSince.delete(task);
      if (since === undefined) return;
      if (outcome === "applied" || outcome === "no-op") changeToApplied.observe({ task }, (Date.now() - since) / 1000);
      // Not applied: the change is still waiting for a run that applies it.
      else pendingSince.set(task, Math.min(since, pendingSince.get(task) ?? since));
    },
    phase(task: string, phase: RunPhase, seconds: number) {
      if (!tracked(task)) return;
      phases.observe({ task, phase }, seconds);
    },
    bufferWaited(task, seconds) {
      if (!tracked(task)) return;
      bufferWaits.observe({ task }, seconds);
    },
    driftDetected(task) {
      if (!tracked(task)) return;
      know(task);
      drifts.inc({ task });
    },
    driftChecked(task, result) {
      if (!tracked(task)) return;
      know(task);
      driftChecks.inc({ task, result: (DRIFT_RESULTS as readonly string[]).includes(result) ? result : "other" });
    },
    stateNotSaved(task) {
      if (!tracked(task)) return;
      notSaved.inc({ task });
    },
    objectsOutsideState(task, count) {
      if (!tracked(task)) return;
      outsideState.inc({ task }, count);
    },
    viewFetched(kind, f) {
      viewFetches.inc({ kind });
      if (!f.ok) viewErrors.inc({ kind });
      viewSeconds.observe({ kind, blocking: String(f.blocking) }, f.seconds);
    },
    viewIndexReset(kind) {
      indexResets.inc({ kind });
    },
    blockingQuery(kind, delta) {
      openQueries.inc({ kind }, delta);
    },
    consulRequest(f) {
      requests.inc({ result: f.ok ? "ok" : "error" });
      requestSeconds.observe({ blocking: String(f.blocking) }, f.seconds);
    },
    serviceSkipped(task) {
      if (!tracked(task)) return;
      skippedServices.inc({ task });
    },
    terraformProcess(command, delta) {
      processes.inc({ command: processLabel(command) }, delta);
    },
    terraformHung(command) {
      hungCommands.inc({ command: processLabel(command) });
    },
    leadership(isLeader) {
      if (isLeader !== leading) leaderChanges.inc();
      leading = isLeader;
      leader.set(isLeader ? 1 : 0);
    },
    notificationSent(webhook, kind, outcome) {
      notifications[outcome].inc({ webhook, kind });
    },
    notificationAttempt(webhook, result, seconds) {
      notifySeconds.observe({ webhook, result }, seconds);
    },
    observe(p) {
      probe = p;
    },
    async scrape() {
      return { contentType: registry.contentType, body: await registry.metrics() };
    },
  };
}
