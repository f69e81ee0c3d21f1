/**
 * What the parts of cts tell the metrics, in their own words. The composition root makes one
 * (Prometheus for the daemon, the no-op one for `once`, `inspect` and `synth`) and passes it down,
 * so no layer imports a global registry. Arguments are task names and fixed words only: never
 * catalog data (addresses, tags, KV paths or values), which would make label sets unbounded.
 */
export interface Metrics {
  /** Watched data of a task changed (starts the task's change → applied clock, if not running). */
  taskChanged(task: string): void;
  /** A run of a task started (its input is read now, so changes before this are what it applies). */
  runStarted(task: string): void;
  /** A run ended with `outcome` (applied, no-op, planned, destroyed, failed, cancelled, drift…). */
  runFinished(task: string, outcome: string, seconds: number): void;
  /** One phase of a run took `seconds`. */
  phase(task: string, phase: RunPhase, seconds: number): void;
  /** A buffer period held a task's changes for `seconds` before asking for a run. */
  bufferWaited(task: string, seconds: number): void;
  /** A drift check found changes while the task's inputs were unchanged. */
  driftDetected(task: string): void;
  /** A drift check ended with `result` (in-sync, drifted, corrected, failed, not-applied, inputs-changed); drift checks are not runs. */
  driftChecked?(task: string, result: string): void;
  /** A blocking-query view answered (or failed) after `seconds`. */
  viewFetched(kind: string, fetch: { ok: boolean; blocking: boolean; seconds: number }): void;
  /** A view started over from index 0 (Consul's index went backwards, or after an error). */
  viewIndexReset(kind: string): void;
  /** A blocking query was sent (+1) or answered/cancelled (-1). */
  blockingQuery(kind: string, delta: 1 | -1): void;
  /** One HTTP call to Consul took `seconds`. */
  consulRequest(fetch: { ok: boolean; blocking: boolean; seconds: number }): void;
  /** A service Consul cannot serve was left out of a task's input (told once per task and service). */
  serviceSkipped(task: string): void;
  /** A Terraform (or warm provider) process started (+1) or ended (-1). */
  terraformProcess(command: string, delta: 1 | -1): void;
  /** A Terraform command hung (no exit within its limit, or silent too long) and was killed. */
  terraformHung(command: string): void;
  /** An apply of a task could not save its state or lost its state lock (TERRAFORM_STATE_NOT_SAVED). */
  stateNotSaved?(task: string): void;
  /** The next apply found `count` objects that failed apply had made outside the saved state. */
  objectsOutsideState?(task: string, count: number): void;
  /** This instance became (true) or stopped being (false) the high-availability leader. */
  leadership(leader: boolean): void;
  /** A notification left the queue of `webhook`: delivered, given up (failed) or dropped (queue full, stopping). */
  notificationSent(webhook: string, kind: string, outcome: "delivered" | "failed" | "dropped"): void;
  /** One attempt to deliver a notification to `webhook` ended after `seconds`. */
  notificationAttempt(webhook: string, result: "ok" | "error" | "timeout", seconds: number): void;
  /** State read at scrape time: tasks and the work queue. Replaces an earlier probe. */
  observe(probe: StateProbe): void;
  /** The metrics in Prometheus text format. */
  scrape(): Promise<{ contentType: string; body: string }>;
}

/** The timed phases of a run. */
export type RunPhase = "synthesize" | "init" | "plan" | "apply" | "destroy";

/** One task's state as the status gauges show it. */
export interface TaskGaugeState {
  task: string;
  enabled: boolean;
  /** CTS's status word: successful, errored, critical, unknown. */
  status: string;
  /** The newest event's outcome, if any. */
  lastOutcome?: string;
  /** Whether the task holds a plan waiting for approval. */
  held?: boolean;
}

/** Reads of the runtime's state, taken when metrics are scraped. */
export interface StateProbe {
  tasks(): TaskGaugeState[];
  /** Whether a task is registered: runs of others (an API dry run's throwaway task) get no series of their own. */
  has(task: string): boolean;
  /** Runs waiting for a slot, and runs in progress. */
  queue(): { waiting: number; running: number };
  /** Whether Consul answers (the daemon's; absent in one-shot commands). */
  consulReachable?(): boolean;
}

/** Metrics that record nothing (one-shot commands, unit tests). */
export const noMetrics: Metrics = {
  taskChanged() {},
  runStarted() {},
  runFinished() {},
  phase() {},
  bufferWaited() {},
  driftDetected() {},
  driftChecked() {},
  viewFetched() {},
  viewIndexReset() {},
  blockingQuery() {},
  consulRequest() {},
  serviceSkipped() {},
  terraformProcess() {},
  terraformHung() {},
  leadership() {},
  notificationSent() {},
  notificationAttempt() {},
  observe() {},
  scrape: () => Promise.resolve({ contentType: "text/plain; version=0.0.4; charset=utf-8", body: "" }),
};

/** A view's kind from its key (`health:…`, `catalog:…`, `kv:…`): a fixed word, never the query. */
export function viewKind(key: string): string {
  const kind = key.slice(0, key.indexOf(":"));
  return kind === "health" || kind === "catalog" || kind === "kv" ? kind : "other";
}

/** A Terraform process's label from how the driver names it (`tofu init`, `… -debug` for providers). */
export function processLabel(command: string): string {
  if (/-debug$/.test(command)) return "provider";
  const sub = command.split(/\s+/)[1] ?? "";
  return ["init", "workspace", "plan", "apply", "show", "version", "validate", "destroy", "providers", "output", "state"].includes(sub) ? sub : "other";
}
