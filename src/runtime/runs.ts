import { CtsError, messageOf, toCtsError, doctorHint } from "../errors/cts-error.ts";
import { systemClock, type Clock } from "../time/clock.ts";
import type { Logger } from "../log/logger.ts";
import type { Metrics } from "../metrics/metrics.ts";
import { userCodeFields } from "../errors/user-frames.ts";
import { eventError, makeEvent, type Activity, type TaskEvent } from "./events.ts";
import type { RetryNotice, RunOutcome } from "./interfaces.ts";
import { nextDelay, withRetries, type RetryHistory, type RetryPolicy } from "./retry.ts";
import type { RunMode, TaskRunner } from "./run.ts";
import { driftIsNews } from "./drift.ts";
import type { TaskEntry } from "./task-entry.ts";
import type { ModuleTask } from "../task/module-task.ts";
import { WorkQueue } from "./work-queue.ts";
import { runRecord } from "./history.ts";
import type { RunTrigger } from "../state/records.ts";
import type { ChainRuns } from "./chains.ts";
import { traceRun } from "../trace/tracing.ts";
import { runTraceAttributes, runTraceEnd } from "./run-trace.ts";

/** What the runs ask of the controller (Controller implements it). */
export interface RunGate {
  /** A live, enabled entry, or why it cannot run now (paused, elsewhere, disabled, deleted). */
  runnable(name: string): TaskEntry | RunOutcome;
  /** Records an event (the event store and the observers). */
  record(event: TaskEvent): void;
  /** A run is retried after a delay (the observers are told). */
  retrying(notice: RetryNotice): void;
}

/** How runs are queued and retried (from the config and the command's flags). */
export interface RunSettings {
  policy: RetryPolicy;
  /** Runs at once, over all tasks. */
  concurrency: number;
  /** The retry waits' clock (default: the real one; tests pass a fake). */
  clock?: Clock;
}

/** What the runs need. */
export interface RunsDeps extends RunSettings {
  /** Makes each attempt: input → synthesize → Terraform (run.ts). */
  runner: TaskRunner;
  /** May a task run now, and where its events go (the controller). */
  gate: RunGate;
  log: Logger;
  activity: Activity;
  /** Where runs, their outcomes and found drift are counted. */
  metrics?: Metrics;
  /** Task chains: which runs wait for, follow or are skipped after an upstream task's run (chains.ts). */
  chains?: ChainRuns;
}

/**
 * Runs: the work queue (one run per task at a time, a bounded number overall), the callers
 * waiting for a run's outcome, and each run's retries, event and log line. The path of a run:
 * enqueue → the queue calls runQueued → gate.runnable → execute → attempts (retries) →
 * runner.attempt (run.ts).
 */
export class TaskRuns {
  readonly queue: WorkQueue;
  /** Callers of request() waiting for the next run of a task to start and end. */
  private readonly waiters = new Map<string, Array<(o: RunOutcome) => void>>();
  /** Runs waiting out a retry's backoff, by task: enqueue (new data) ends the wait. */
  private readonly retryWaits = new Map<string, AbortController>();
  /** Tasks whose queue slot is wanted for an apply run (enqueue, request). */
  private readonly applyWanted = new Set<string>();
  /** Tasks whose queue slot is wanted for a drift check, with the callers waiting for it. */
  private readonly driftWanted = new Map<string, Array<(o: RunOutcome) => void>>();

  /** What asked for each task's next run (the first reason wins while it is queued): its history record says. */
  private readonly triggers = new Map<string, RunTrigger>();

  /** Cancels each task's run in progress (and its retry waits). */
  private readonly inProgress = new Map<string, AbortController>();

  constructor(private readonly deps: RunsDeps) {
    this.queue = new WorkQueue((name) => this.runQueued(name), deps.concurrency);
  }

  /** Cancels the task's run in progress, if any (Terraform gets SIGINT; its retry waits end). */
  cancel(name: string): void {
    this.inProgress.get(name)?.abort();
  }

  /** Cancels every run in progress; `reason` goes to the driver with the signal (a fenced run's kill deadline). Returns how many it cancelled. */
  cancelAll(reason?: unknown): number {
    let n = 0;
    for (const a of this.inProgress.values()) {
      if (!a.signal.aborted) n++;
      a.abort(reason);
    }
    return n;
  }

  /** Asks for a run of a task, as a data change does (collapses with one already queued); `trigger`: what asked (default: a data change). */
  enqueue(name: string, trigger?: RunTrigger): void {
    if (trigger && !this.triggers.has(name)) this.triggers.set(name, trigger);
    this.applyWanted.add(name);
    this.queue.enqueue(name);
    // A run waiting out a retry's backoff attempts at once: the new data may be what it lacked
    // (Consul back after an outage), and it must not wait behind a schedule made for old data.
    const waiting = this.retryWaits.get(name);
    if (waiting) {
      this.retryWaits.delete(name);
      this.deps.log.debug(`task '${name}': new data during a retry wait; attempting now`, { task: name });
      waiting.abort();
    }
  }

  /** Queues a run and resolves with the outcome of a run that started after this call. */
  request(name: string, trigger?: RunTrigger): Promise<RunOutcome> {
    return new Promise((resolve) => {
      this.waiters.set(name, [...(this.waiters.get(name) ?? []), resolve]);
      this.enqueue(name, trigger);
    });
  }

  /**
   * Queues a drift check: it takes the task's queue slot like a run (never beside a run of the same
   * task, within the overall limit) and collapses with one already queued. Resolves with its outcome.
   */
  requestDrift(name: string): Promise<RunOutcome> {
    return new Promise((resolve) => {
      this.driftWanted.set(name, [...(this.driftWanted.get(name) ?? []), resolve]);
      this.queue.enqueue(name);
    });
  }

  /** Drops queued runs and drift checks of a task; its waiting callers get `outcome` (a dropped run never ends otherwise). */
  drop(name: string, outcome?: RunOutcome): void {
    this.queue.forget(name);
    for (const d of this.deps.chains?.dropped(name, (t) => t !== name && this.applyWanted.has(t)) ?? []) this.queue.enqueue(d);
    this.triggers.delete(name);
    this.applyWanted.delete(name);
    const checks = this.driftWanted.get(name) ?? [];
    this.driftWanted.delete(name);
    const dropped = outcome ?? { task: name, ok: false, outcome: "cancelled", error: new CtsError("TASK_RUN_DROPPED", "usage", "drift check was dropped: the task was disabled, deleted or replaced before it ran.", { task: name }) };
    for (const w of checks) w(dropped);
    if (outcome) this.answer(name, outcome);
  }

  /** Every caller waiting for a task's run gets `outcome`. The one place waiters are answered. */
  answer(name: string, outcome: RunOutcome): void {
    const waiters = this.waiters.get(name) ?? [];
    this.waiters.delete(name);
    for (const w of waiters) w(outcome);
  }

  /** Names of tasks with callers waiting. */
  waiting(): string[] {
    return [...this.waiters.keys()];
  }

  /** One run outside the queue's collapsing (plans, destroys, dry runs), with retries and, unless a plan, an event. */
  async execute(e: TaskEntry, mode: RunMode, trigger?: RunTrigger): Promise<RunOutcome> {
    const start = new Date();
    const asked = this.triggers.get(e.name);
    if (mode === "apply") this.triggers.delete(e.name);
    const why: RunTrigger = mode === "destroy" ? "destroy" : (trigger ?? asked ?? (e.task.condition.kind === "schedule" ? "schedule" : "change"));
    this.deps.activity.report({ type: "start", task: e.name, kind: "run" });
    const abort = new AbortController();
    if (mode !== "plan") this.inProgress.set(e.name, abort);
    // Callers waiting for an apply get the outcome of this run: it started after they asked.
    const waiters = mode === "apply" ? (this.waiters.get(e.name) ?? []) : [];
    if (mode === "apply") this.waiters.delete(e.name);
    const started = performance.now();
    this.deps.metrics?.runStarted(e.name);
    // A traced run (OTEL_* set): its root span, the phases' spans within it (src/trace/).
    const outcome = await traceRun(e.name, runTraceAttributes(e, mode, why), () => this.attempts(e, mode, abort.signal), runTraceEnd);
    this.deps.metrics?.runFinished(e.name, outcome.outcome, (performance.now() - started) / 1000);
    if (mode !== "plan") {
      if (this.inProgress.get(e.name) === abort) this.inProgress.delete(e.name);
      // An apply makes the infrastructure match again: the last drift finding no longer holds.
      if (outcome.ok && outcome.outcome === "applied") this.deps.runner.state.recordDrift(e.name, undefined);
      this.deps.gate.record(eventOf(e, start, outcome));
      this.recordRun(e, why, start, outcome);
      if (outcome.ok) this.deps.log.info(`task '${e.name}': ${outcome.outcome}`, { task: e.name, ...(outcome.result?.summary ?? {}), ...runUrl(outcome) });
      else if (outcome.outcome === "held" || outcome.outcome === "rejected")
        this.deps.log.warn(`task '${e.name}': ${(outcome.error?.message ?? outcome.outcome).replace(`Task '${e.name}': `, "")}`, { task: e.name, outcome: outcome.outcome, ...(outcome.result?.summary ?? {}) });
      else this.deps.log.error(`task '${e.name}': ${outcome.error?.message ?? outcome.outcome}${doctorHint(outcome.error)}`, { task: e.name, ...userCodeFields(outcome.error) });
    }
    this.deps.activity.ran(e.name);
    this.deps.activity.report({ type: "end", task: e.name, kind: "run", outcome: outcome.outcome, ok: outcome.ok });
    for (const w of waiters) w(outcome);
    return outcome;
  }

  /**
   * A drift check in the task's queue slot: records an event only when drift was found (events are
   * few, and a check that found nothing must not push real runs out), logs, answers its callers.
   */
  private async checkDrift(e: TaskEntry, waiters: Array<(o: RunOutcome) => void>): Promise<void> {
    const start = new Date();
    const abort = new AbortController();
    this.inProgress.set(e.name, abort);
    this.deps.activity.report({ type: "start", task: e.name, kind: "drift" });
    const outcome = await this.attempts(e, "plan", abort.signal, (signal) => this.deps.runner.checkDrift(e, signal));
    if (this.inProgress.get(e.name) === abort) this.inProgress.delete(e.name);
    const drift = outcome.drift ?? { state: "failed" as const, checkedAt: new Date().toISOString(), error: outcome.error?.message ?? outcome.outcome };
    this.deps.runner.state.recordDrift(e.name, drift);
    // cts_task_drift_detected_total counts checks that found the infrastructure changed out of band.
    if (drift.state === "drifted" || drift.state === "corrected") this.deps.metrics?.driftDetected(e.name);
    // A check counts as a drift check, never as a run (cts_task_runs_total).
    this.deps.metrics?.driftChecked?.(e.name, drift.state);
    if (driftIsNews(drift)) {
      this.deps.gate.record(
        makeEvent(e.name, start, {
          success: outcome.ok,
          outcome: "drift",
          error: outcome.error ? eventError(outcome.error) : null,
          config: eventConfig(e),
          ...(drift.changes ? { changes: drift.changes } : {}),
          ...(drift.changes && outcome.result?.resources?.length ? { resources: outcome.result.resources } : {}),
          drift: { corrected: drift.state === "corrected", ...(drift.applied ? { applied: drift.applied } : {}) },
        }),
      );
      this.recordRun(e, "drift-check", start, outcome);
    }
    if (drift.state === "drifted") this.deps.log.warn(`task '${e.name}': drift: infrastructure changed out of band (${summaryText(drift.changes)}); not corrected (driftCheck.correct is off)`, { task: e.name, ...drift.changes });
    else if (drift.state === "corrected") this.deps.log.warn(`task '${e.name}': drift corrected: infrastructure changed out of band (${summaryText(drift.changes)}) was applied again`, { task: e.name, ...drift.changes });
    else if (drift.state === "failed") this.deps.log.error(`task '${e.name}': drift check failed: ${drift.error}`, { task: e.name });
    else this.deps.log.info(`task '${e.name}': drift check: ${drift.state}`, { task: e.name });
    this.deps.activity.checked(e.name);
    this.deps.activity.report({ type: "end", task: e.name, kind: "drift", outcome: outcome.outcome, ok: outcome.ok });
    for (const w of waiters) w(outcome);
  }

  /** Keeps a run in the task's history (the state store prunes it by the retention). */
  private recordRun(e: TaskEntry, trigger: RunTrigger, start: Date, outcome: RunOutcome): void {
    try {
      this.deps.runner.state.recordRun(e.name, runRecord(e.name, trigger, start, new Date(), outcome), this.deps.runner.retention);
    } catch (err) {
      this.deps.log.warn(`task '${e.name}': its run could not be kept in the history: ${messageOf(err)}`, { task: e.name });
    }
  }

  private async runQueued(name: string): Promise<void> {
    const e = this.deps.gate.runnable(name);
    if ("ok" in e) {
      for (const d of this.deps.chains?.dropped(name, this.wanted) ?? []) this.queue.enqueue(d);
      // Whoever asked for this run (runNow, once) or drift check still gets an answer.
      this.answer(name, e);
      const checks = this.driftWanted.get(name) ?? [];
      this.driftWanted.delete(name);
      this.applyWanted.delete(name);
      this.triggers.delete(name);
      for (const w of checks) w(e);
      return;
    }
    // A wanted apply goes first (new data matters more than a check); the check then runs in the
    // next turn of the slot, against what was just applied.
    if (this.applyWanted.has(name) || !this.driftWanted.has(name)) {
      // Task chains: the run waits while an upstream task's run is wanted or in progress (it is
      // queued again when that ends), and is skipped while an upstream task is broken.
      // A change that reaches an upstream task and this one fires their triggers in one turn: the
      // upstream task's run is asked for by the end of it, and this run then waits for it.
      if (this.deps.chains?.upstreamOf(name).length) await new Promise((r) => setImmediate(r));
      const chain = this.deps.chains?.before(name, this.wanted);
      if (chain && "wait" in chain) {
        this.deps.log.debug(`task '${name}': waits for upstream task '${chain.wait}'`, { task: name });
        if (this.driftWanted.has(name)) this.queue.enqueue(name);
        return;
      }
      this.applyWanted.delete(name);
      if (chain) return this.skip(e, chain.skip, chain.upstream);
      this.deps.chains?.started(name);
      const outcome = await this.execute(e, "apply");
      this.followChain(name, outcome);
      if (this.driftWanted.has(name)) this.queue.enqueue(name);
      return;
    }
    const checks = this.driftWanted.get(name) ?? [];
    this.driftWanted.delete(name);
    await this.checkDrift(e, checks);
  }

  /** Whether a task has an apply run wanted (queued, or waiting in its chain). */
  private readonly wanted = (task: string): boolean => this.applyWanted.has(task);

  /** After an apply run of `name`: its downstream tasks run next, or are skipped (chains.ts). */
  private followChain(name: string, outcome: RunOutcome): void {
    const chains = this.deps.chains;
    if (!chains) return;
    const next = chains.ended(name, outcome, this.wanted);
    for (const s of next.skip) {
      const e = this.deps.gate.runnable(s.task);
      // A downstream task that cannot run here (disabled, elsewhere) has nothing to skip; one in
      // its queue slot now skips itself (chains.before says so).
      if ("ok" in e || this.queue.isRunning(s.task)) continue;
      this.queue.forget(s.task);
      this.applyWanted.delete(s.task);
      void this.skip(e, s.why, s.upstream);
    }
    for (const d of next.run) this.enqueue(d, "upstream");
    // It ran on the chain's data while its own had changed since: once more, with the newer data.
    if (next.again) this.enqueue(name, "change");
  }

  /**
   * A run skipped because an upstream task failed or is held (task chains): an event and a history
   * record say why, its waiting callers get the outcome, nothing is synthesized or applied.
   */
  private async skip(e: TaskEntry, why: string, upstream: string): Promise<void> {
    const start = new Date();
    const trigger = this.triggers.get(e.name) ?? "upstream";
    this.triggers.delete(e.name);
    const outcome: RunOutcome = {
      task: e.name,
      ok: false,
      outcome: "skipped",
      error: new CtsError("TASK_UPSTREAM_FAILED", "external", `was skipped: ${why}. It runs again once '${upstream}' applies.`, { task: e.name, detail: { upstream } }),
    };
    this.deps.gate.record(eventOf(e, start, outcome));
    this.recordRun(e, trigger, start, outcome);
    this.deps.metrics?.runFinished(e.name, "skipped", 0);
    this.deps.log.warn(`task '${e.name}': skipped: ${why}`, { task: e.name, upstream });
    this.deps.activity.ran(e.name);
    this.deps.activity.report({ type: "end", task: e.name, kind: "run", outcome: "skipped", ok: false });
    this.answer(e.name, outcome);
  }

  private async attempts(e: TaskEntry, mode: RunMode, signal: AbortSignal, attempt = (s: AbortSignal) => this.deps.runner.attempt(e, mode, s)): Promise<RunOutcome> {
    const history: RetryHistory = { failed: 0, locked: 0, hung: 0 };
    const policy = this.deps.policy;
    const clock = this.deps.clock ?? systemClock;
    try {
      return await withRetries(
        () => attempt(signal),
        (err) => nextDelay(policy, toCtsError(err, "TASK_RUN_FAILED", e.name), history, mode === "apply", clock.now()),
        signal,
        (err, delayMs, attempt) => {
          const error = toCtsError(err, "TASK_RUN_FAILED", e.name);
          this.deps.log.warn(`task '${e.name}': attempt ${attempt} failed (${error.code}), retrying in ${delayMs} ms: ${messageOf(err)}`, { task: e.name, code: error.code });
          this.deps.gate.retrying({ task: e.name, code: error.code, attempt, delayMs, message: error.message });
        },
        clock,
        mode === "apply"
          ? () => {
              const wake = new AbortController();
              this.retryWaits.set(e.name, wake);
              return wake.signal;
            }
          : undefined,
      );
    } catch (err) {
      const error = toCtsError(err, "TASK_RUN_FAILED", e.name);
      const cancelled = signal.aborted || error.code === "TERRAFORM_CANCELLED";
      return { task: e.name, ok: false, outcome: cancelled ? "cancelled" : "failed", error };
    } finally {
      this.retryWaits.delete(e.name);
    }
  }
}

/** The refusal for a run asked of a task that cannot run now. */
export function refused(name: string, why: "paused" | "elsewhere" | "disabled" | "deleted"): RunOutcome {
  if (why === "elsewhere")
    return { task: name, ok: false, outcome: "cancelled", error: new CtsError("CTS_NOT_OWNER", "external", "was not run: another member of the cluster owns this task (shared mode); ask that member.", { task: name }) };
  if (why === "paused")
    return { task: name, ok: false, outcome: "cancelled", error: new CtsError("CTS_PAUSED", "external", "was not run: this instance stopped running tasks (it is not the high-availability leader).", { task: name }) };
  if (why === "disabled") return { task: name, ok: false, outcome: "disabled", error: new CtsError("TASK_DISABLED", "usage", "is disabled. Enable it first.", { task: name }) };
  return { task: name, ok: false, outcome: "deleted", error: new CtsError("TASK_NOT_FOUND", "usage", "was deleted.", { task: name }) };
}

function eventConfig(e: TaskEntry): TaskEvent["config"] {
  const source = (e.task as Partial<ModuleTask>).module;
  const c = e.task.condition;
  const services = c.kind === "services" ? (c.query.names ?? [`regexp:${c.query.regexp}`]) : [];
  return { ...(source ? { source } : {}), services };
}

function summaryText(c: { add: number; change: number; destroy: number } | undefined): string {
  return c ? `${c.add} to add, ${c.change} to change, ${c.destroy} to destroy` : "changes present";
}

function eventOf(e: TaskEntry, start: Date, outcome: RunOutcome): TaskEvent {
  return makeEvent(e.name, start, {
    success: outcome.ok,
    outcome: outcome.outcome as TaskEvent["outcome"],
    error: outcome.error ? eventError(outcome.error) : null,
    config: eventConfig(e),
    ...(outcome.result ? { changes: outcome.result.summary } : {}),
    ...(outcome.result?.resources?.length ? { resources: outcome.result.resources } : {}),
    ...runUrl(outcome),
    ...(outcome.result?.checks ? { checks: outcome.result.checks } : {}),
    ...(outcome.hold ? { hold: { reasons: outcome.hold.reasons, why: outcome.hold.why, heldAt: outcome.hold.heldAt } } : {}),
    ...(outcome.stateLost ? { state_lost: outcome.stateLost } : {}),
    ...notSavedFields(outcome),
    ...eventOutputs(outcome),
  });
}

/** The largest outputs an event carries (events are few and small; `cts task outputs` shows any size). */
const EVENT_OUTPUTS_BYTES = 16 * 1024;

/** An apply's outputs for its event (sensitive values already redacted by the driver), when it has any and they are small enough. */
function eventOutputs(outcome: RunOutcome): { outputs?: TaskEvent["outputs"] } {
  const outputs = outcome.result?.outputs;
  // A run without outputs keeps CTS's event shape.
  if (!outputs || !Object.keys(outputs).length || !outcome.ok || (outcome.outcome !== "applied" && outcome.outcome !== "destroyed")) return {};
  return Buffer.byteLength(JSON.stringify(outputs)) <= EVENT_OUTPUTS_BYTES ? { outputs } : {};
}

/** The run's page (Terraform Cloud driver): from the result, or from the error of a run that did not succeed. */
function runUrl(outcome: RunOutcome): { run_url?: string } {
  const url = outcome.result?.url ?? outcome.error?.detail?.url;
  return typeof url === "string" ? { run_url: url } : {};
}

/** The event's `state_not_saved` and `outside_state`: from the report of an apply after a failed save, or from the failed save itself. */
function notSavedFields(outcome: RunOutcome): Pick<TaskEvent, "state_not_saved" | "outside_state"> {
  const report = outcome.stateNotSaved;
  if (report) return { state_not_saved: report.error, outside_state: report.outside };
  const err = outcome.error;
  if (err?.code !== "TERRAFORM_STATE_NOT_SAVED") return {};
  const objects = err.detail.outsideState;
  return { state_not_saved: err.message, ...(Array.isArray(objects) ? { outside_state: objects as Array<{ address: string; id?: string }> } : {}) };
}
