import { CtsError, messageOf, toCtsError } from "../errors.ts";
import type { Logger } from "../log.ts";
import type { Metrics } from "../metrics/metrics.ts";
import { makeEvent, type Activity, type TaskEvent } from "./events.ts";
import type { RetryNotice, RunOutcome } from "./interfaces.ts";
import { nextDelay, withRetries, type RetryHistory, type RetryPolicy } from "./retry.ts";
import type { RunMode } from "./run.ts";
import type { TaskEntry } from "./task-entry.ts";
import type { ModuleTask } from "../task/module-task.ts";
import { WorkQueue } from "./work-queue.ts";

/** What the runs need. */
export interface RunsDeps {
  /** A live, enabled entry, or why it cannot run now (paused, disabled, deleted). */
  runnable(name: string): TaskEntry | RunOutcome;
  /** One attempt (run.ts). */
  attempt(e: TaskEntry, mode: RunMode, signal: AbortSignal): Promise<RunOutcome>;
  policy: RetryPolicy;
  concurrency: number;
  log: Logger;
  activity: Activity;
  /** Records an event (the event store and the observers). */
  record(event: TaskEvent): void;
  /** A run is retried after a delay. */
  retrying?(notice: RetryNotice): void;
  /** Where runs and their outcomes are counted. */
  metrics?: Metrics;
}

/**
 * Runs: the work queue (one run per task at a time, a bounded number overall), the callers
 * waiting for a run's outcome, and each run's retries, event and log line.
 */
export class TaskRuns {
  readonly queue: WorkQueue;
  /** Callers of request() waiting for the next run of a task to start and end. */
  private readonly waiters = new Map<string, Array<(o: RunOutcome) => void>>();

  constructor(private readonly deps: RunsDeps) {
    this.queue = new WorkQueue((name) => this.runQueued(name), deps.concurrency);
  }

  /** Asks for a run of a task, as a data change does (collapses with one already queued). */
  enqueue(name: string): void {
    this.queue.enqueue(name);
  }

  /** Queues a run and resolves with the outcome of a run that started after this call. */
  request(name: string): Promise<RunOutcome> {
    return new Promise((resolve) => {
      this.waiters.set(name, [...(this.waiters.get(name) ?? []), resolve]);
      this.queue.enqueue(name);
    });
  }

  /** Drops queued runs of a task; its waiting callers get `outcome` (a dropped run never ends otherwise). */
  drop(name: string, outcome?: RunOutcome): void {
    this.queue.forget(name);
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
  async execute(e: TaskEntry, mode: RunMode): Promise<RunOutcome> {
    const start = new Date();
    const abort = new AbortController();
    if (mode !== "plan") e.abort = abort;
    // Callers waiting for an apply get the outcome of this run: it started after they asked.
    const waiters = mode === "apply" ? (this.waiters.get(e.name) ?? []) : [];
    if (mode === "apply") this.waiters.delete(e.name);
    const started = performance.now();
    this.deps.metrics?.runStarted(e.name);
    const outcome = await this.attempts(e, mode, abort.signal);
    this.deps.metrics?.runFinished(e.name, outcome.outcome, (performance.now() - started) / 1000);
    if (mode !== "plan") {
      if (e.abort === abort) e.abort = undefined;
      this.deps.record(eventOf(e, start, outcome));
      if (outcome.ok) this.deps.log.info(`task '${e.name}': ${outcome.outcome}`, { task: e.name, ...(outcome.result?.summary ?? {}) });
      else this.deps.log.error(`task '${e.name}': ${outcome.error?.message ?? outcome.outcome}`, { task: e.name });
    }
    this.deps.activity.ran(e.name);
    for (const w of waiters) w(outcome);
    return outcome;
  }

  private async runQueued(name: string): Promise<void> {
    const e = this.deps.runnable(name);
    if ("ok" in e) {
      // Whoever asked for this run (runNow, once) still gets an answer.
      this.answer(name, e);
      return;
    }
    await this.execute(e, "apply");
  }

  private async attempts(e: TaskEntry, mode: RunMode, signal: AbortSignal): Promise<RunOutcome> {
    const history: RetryHistory = { failed: 0, locked: 0, hung: 0 };
    const policy = this.deps.policy;
    try {
      return await withRetries(
        () => this.deps.attempt(e, mode, signal),
        (err) => nextDelay(policy, toCtsError(err, "TASK_RUN_FAILED", e.name), history, mode === "apply"),
        signal,
        (err, delayMs, attempt) => {
          const error = toCtsError(err, "TASK_RUN_FAILED", e.name);
          this.deps.log.warn(`task '${e.name}': attempt ${attempt} failed (${error.code}), retrying in ${delayMs} ms: ${messageOf(err)}`, { task: e.name, code: error.code });
          this.deps.retrying?.({ task: e.name, code: error.code, attempt, delayMs, message: error.message });
        },
      );
    } catch (err) {
      const error = toCtsError(err, "TASK_RUN_FAILED", e.name);
      const cancelled = signal.aborted || error.code === "TERRAFORM_CANCELLED";
      return { task: e.name, ok: false, outcome: cancelled ? "cancelled" : "failed", error };
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

function eventOf(e: TaskEntry, start: Date, outcome: RunOutcome): TaskEvent {
  const source = (e.task as Partial<ModuleTask>).module;
  const c = e.task.condition;
  const services = c.kind === "services" ? (c.query.names ?? [`regexp:${c.query.regexp}`]) : [];
  return makeEvent(e.name, start, {
    success: outcome.ok,
    outcome: outcome.outcome as TaskEvent["outcome"],
    error: outcome.error ? { message: outcome.error.message } : null,
    config: { ...(source ? { source } : {}), services },
    ...(outcome.result ? { changes: outcome.result.summary } : {}),
  });
}
