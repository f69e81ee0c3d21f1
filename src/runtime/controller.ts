import type { ConsulReachability } from "../consul/reachability.ts";
import { once } from "node:events";
import { atMost } from "../time/pause.ts";
import { CtsError, messageOf, doctorHint } from "../errors/cts-error.ts";
import type { Logger } from "../log/logger.ts";
import type { ModuleTaskSpec } from "../synth/task-ref.ts";
import { userCodeFields } from "../errors/user-frames.ts";
import { Activity, EventStore, eventError, makeEvent, type RunActivity, type TaskEvent } from "./events.ts";
import type { HaControl, RetryNotice, RunModes, RunOutcome, TaskChange, TaskControl, TaskView } from "./interfaces.ts";
import type { StoredState } from "../state/stored-state.ts";
import type { OutputsRecord, RunRecord, StoredTask } from "../state/records.ts";
import type { Metrics } from "../metrics/metrics.ts";
import type { FencedCancel } from "../driver/types.ts";
import type { TaskRunner } from "./run.ts";
import type { HeldPlan } from "./holds.ts";
import { refused, TaskRuns, type RunGate, type RunSettings } from "./runs.ts";
import { Ownership } from "./ownership.ts";
import { TaskChanges } from "./task-changes.ts";
import type { TaskEntry } from "./task-entry.ts";
import type { TaskRegistry } from "./tasks.ts";
import { keepsSynthesizerWarm } from "./warm-policy.ts";
import { Triggers, type TriggerGate, type TriggerSettings } from "./triggers.ts";
import type { ChainRuns } from "./chains.ts";
import { chainIdOf, chainOrder } from "../task/chains.ts";

export type { RestoredTask, RunOutcome, TaskChange, TaskView } from "./interfaces.ts";

/** The parts a controller is built from (the composition root, src/daemon/compose.ts, makes them). */
export interface ControllerParts {
  tasks: TaskRegistry;
  /** Task chains: what waits for, follows or is skipped after an upstream run, and the data a chain runs on (chains.ts). */
  chains: ChainRuns;
  /** Makes each attempt: input → synthesize → Terraform; owns working dirs, warm providers, the synthesizer's worker (run.ts). */
  runner: TaskRunner;
  events: EventStore;
  activity: Activity;
  /** How runs are queued and retried (runs.ts). */
  runs: RunSettings;
  /** What starts runs: the watcher (daemon mode), buffer periods, drift checks (triggers.ts). */
  triggers: TriggerSettings;
  log: Logger;
  metrics?: Metrics;
  /** Whether Consul answers (watch mode): while it does not, every task's status is stale. */
  consul?: ConsulReachability;
}

/**
 * The runtime's one face to the API, high availability and the CLI: it keeps the registry, the
 * triggers and the runs in step (a disabled task stops watching, a deleted one is forgotten once
 * its queue slot is free). It holds no pipeline of its own: a data change goes Triggers (triggers.ts)
 * → TaskRuns (runs.ts) → TaskRunner (run.ts) → synthesizer → Terraform driver, and the controller
 * answers the two questions they ask (RunGate, TriggerGate: may it run now, where do events go).
 */
export class Controller implements TaskControl, HaControl, RunModes, RunGate, TriggerGate {
  readonly events: EventStore;
  private readonly triggers: Triggers;
  private readonly runs: TaskRuns;
  /** Task chains: what waits for, follows or is skipped after an upstream run. */
  private readonly chains: ChainRuns;
  private watching = false;
  private stopped = false;
  /** Paused (a high-availability follower): nothing watches, queued runs are dropped. */
  private paused = false;
  /** Shared cluster mode: the tasks this instance holds the lock of. */
  private readonly owned = new Ownership();
  private readonly changes: TaskChanges;
  /** Who hears of retries (high availability explains a state lock in its own words). */
  private readonly retryListeners = new Set<(notice: RetryNotice) => void>();

  constructor(private readonly parts: ControllerParts) {
    const { runner, activity, log, metrics } = parts;
    this.events = parts.events;
    const chains = (this.chains = parts.chains);
    this.runs = new TaskRuns({ ...parts.runs, runner, gate: this, log, activity, metrics, chains });
    this.triggers = new Triggers({ ...parts.triggers, runs: this.runs, gate: this, activity, log, metrics, warm: (e) => runner.warm(e) });
    this.changes = new TaskChanges({
      tasks: parts.tasks,
      triggers: this.triggers,
      runs: this.runs,
      events: parts.events,
      runner,
      log,
      rewatch: (e) => {
        if (this.watching && e.enabled && this.mine(e.name)) this.triggers.start(e);
      },
      changed: (change) => runner.state.recordTask(change, this.storedRecord(change)),
      mine: (name) => this.mine(name),
    });
    // A Consul that comes back may have come back empty (a dev agent, a lost data dir): every task's
    // Terraform state is looked at, and a task whose state is gone or replaced runs again.
    parts.consul?.onChange((reachable) => {
      if (reachable) void this.checkStates("Consul came back");
    });
  }

  /** A state check in progress, and whether another was asked for meanwhile (many views see one restart). */
  private stateCheck: Promise<string[]> | undefined;
  private stateCheckAgain: string | undefined;

  /**
   * Looks at the Terraform state of every task this instance runs and has applied: a task whose
   * state is gone or was replaced is queued (its run says why and applies again, or holds the plan
   * when guards are set). Calls while one runs are folded into one more. Returns the tasks queued.
   */
  checkStates(why = "asked"): Promise<string[]> {
    if (this.stateCheck) {
      this.stateCheckAgain = why;
      return this.stateCheck;
    }
    this.stateCheck = (async () => {
      const queued: string[] = [];
      for (let reason: string | undefined = why; reason !== undefined; reason = this.stateCheckAgain) {
        this.stateCheckAgain = undefined;
        for (const e of this.parts.tasks.enabled()) {
          if (!this.active || !this.mine(e.name) || queued.includes(e.name)) continue;
          const lost = await this.parts.runner.stateLost(e.name).catch(() => undefined);
          if (!lost || !this.active) continue;
          this.parts.log.warn(`task '${e.name}': its Terraform state ${lost} (looked at after ${reason}); running it again`, { task: e.name });
          this.runs.enqueue(e.name, "state-lost");
          queued.push(e.name);
        }
      }
      return queued;
    })().finally(() => (this.stateCheck = undefined));
    return this.stateCheck;
  }

  /** Whether triggers may fire and queued runs may start. */
  get active(): boolean {
    return !this.stopped && !this.paused;
  }

  /** A live, enabled entry, or the refusal its waiting callers get (the queue asks before each run). */
  runnable(name: string): TaskEntry | RunOutcome {
    if (this.paused) return refused(name, "paused");
    if (!this.mine(name)) return refused(name, "elsewhere");
    const e = this.parts.tasks.find(name);
    if (!e || e.deleting) return refused(name, "deleted");
    return e.enabled ? e : refused(name, "disabled");
  }

  /** Records an event; the task state keeps the task's events (a cluster stores them in Consul). */
  record(event: TaskEvent): void {
    this.events.add(event);
    this.parts.runner.state.recordEvents(event.task_name, this.events.list(event.task_name));
  }

  /** A failed run will be tried again after a delay: the listeners are told (high availability explains lock waits). */
  retrying(notice: RetryNotice): void {
    for (const listener of this.retryListeners) listener(notice);
  }

  /** Calls `listener` before each retry of a failed run; returns the unsubscribe function. */
  onRetry(listener: (notice: RetryNotice) => void): () => void {
    this.retryListeners.add(listener);
    return () => void this.retryListeners.delete(listener);
  }

  /** The record a task change keeps (an API task's spec, an enabled flag); undefined for a deleted task. */
  private storedRecord(change: TaskChange): StoredTask | undefined {
    if (change.kind === "deleted") return undefined;
    const v = this.view(change.task);
    return v ? { name: v.name, origin: v.origin, enabled: v.enabled, ...(v.spec ? { spec: v.spec } : {}) } : undefined;
  }

  /** Runs waiting and running (the queue gauges). */
  queueDepth(): { waiting: number; running: number } {
    return this.runs.queue.depth();
  }

  /** A watch failed for good (an ACL, a bad query): logged and recorded as a failed event. */
  watchFailed(name: string, err: CtsError): void {
    this.parts.log.error(`task '${name}': ${err.message}${doctorHint(err)}`, { task: name, code: err.code, ...userCodeFields(err) });
    this.record(makeEvent(name, new Date(), { success: false, outcome: "failed", error: eventError(err) }));
  }

  // ---- what everyone reads ------------------------------------------------------------------

  /** Names of every task. */
  taskNames(): string[] {
    return this.parts.tasks.names();
  }

  /** A task's view, or undefined. */
  view(name: string): TaskView | undefined {
    const e = this.parts.tasks.find(name);
    if (!e) return undefined;
    const d = this.triggers.driftFor(e);
    const last = this.parts.runner.state.drift(name);
    const drift = d.enabled || last ? { drift: { ...d, ...(last ? { last } : {}) } } : {};
    const { guards, always } = this.parts.runner.guardsOf(e);
    const held = this.parts.runner.holds.held(name);
    const status = this.events.status(name);
    const consul = this.parts.consul;
    // Consul unreachable: what was applied may no longer match Consul; the status says "unknown",
    // the view says since when and what the last status was.
    const stale = consul && !consul.reachable ? { status: "unknown" as const, stale: { since: consul.lostSince ?? "", lastStatus: status, reason: consul.reason ?? "" } } : { status };
    const view = this.parts.tasks.view(name, { ...stale, running: this.runs.queue.isRunning(name), bufferPeriod: this.triggers.bufferFor(e), ...drift });
    if (!view) return view;
    return { ...view, ...(held ? { held } : {}), ...(guards || always ? { guards: { ...(guards ? { guards } : {}), approval: always ? "always" : "guards" } } : {}) };
  }

  /** The task's latest Terraform outputs (sensitive values redacted), from the task state. */
  taskOutputs(name: string): OutputsRecord | undefined {
    return this.parts.runner.state.outputs(name);
  }

  /** The task's run history, newest first, from the task state. */
  taskRuns(name: string): RunRecord[] {
    // A run past maxAge is deleted when the task's next run is kept; until then it is no longer answered.
    const oldest = Date.now() - this.parts.runner.retention.maxAgeMs;
    return this.parts.runner.state.runs(name).filter((r) => Date.parse(r.start_time) >= oldest);
  }

  /** Calls `listener` when a run or drift check starts or ends; returns the unsubscribe function. */
  onActivity(listener: (a: RunActivity) => void): () => void {
    this.parts.activity.on("activity", listener);
    return () => void this.parts.activity.off("activity", listener);
  }

  // ---- modes (CLI) --------------------------------------------------------------------------

  /** Daemon: run every enabled task once, then watch. Returns once the first runs are queued. */
  async watch(): Promise<void> {
    this.watching = true;
    this.parts.log.info("ctrl: executing all tasks once through");
    // A task class whose buffer period is shorter than a worker start would wait for one after a
    // quiet spell: then the synthesis worker stays warm (runtime/warm-policy.ts).
    this.parts.runner.keepWarm(keepsSynthesizerWarm(this.parts.tasks.enabled().map((e) => ({ ref: e.ref, buffer: this.triggers.bufferFor(e) }))));
    for (const e of this.parts.tasks.enabled()) if (this.mine(e.name)) this.triggers.start(e);
    for (const e of this.chainOrdered(this.parts.tasks.enabled())) if (this.mine(e.name)) this.runs.enqueue(e.name, "start");
  }

  /** Runs every enabled task once (no watching); resolves with each outcome. */
  async once(): Promise<RunOutcome[]> {
    this.parts.log.info("ctrl: executing all tasks once through");
    // Task chains: upstream tasks are queued first; a downstream run waits for theirs (runs.ts).
    return Promise.all(this.chainOrdered(this.parts.tasks.enabled()).map((e) => this.runs.request(e.name, "once")));
  }

  /** Plans the named tasks (default all enabled). */
  async inspect(names?: string[]): Promise<RunOutcome[]> {
    const list = names?.length ? names.map((n) => this.parts.tasks.get(n)) : this.parts.tasks.enabled();
    const out: RunOutcome[] = [];
    // Task chains: upstream tasks are planned first (a downstream plan reads their applied outputs).
    for (const e of chainOrder(list.map((e) => ({ name: e.name, after: e.task.after, e })))) out.push(await this.runs.execute(e.e, "plan"));
    return out;
  }

  /** Tasks in chain order: each after the tasks it lists in `after`. */
  private chainOrdered(entries: TaskEntry[]): TaskEntry[] {
    return chainOrder(entries.map((e) => ({ name: e.name, after: e.task.after, e }))).map((x) => x.e);
  }

  /** Resolves when no run is queued or running. */
  idle(): Promise<void> {
    return this.runs.queue.idle();
  }

  /**
   * Resolves when nothing is left to do until new data arrives: no run queued or running and no
   * buffer period waiting to fire. (idle() only looks at the queue.)
   */
  async whenIdle(): Promise<void> {
    for (;;) {
      await this.runs.queue.idle();
      if (!this.active || !this.triggers.buffering()) return;
      await once(this.parts.activity, "run");
    }
  }

  /** Runs finished so far (of one task, or of all). */
  runCount(task?: string): number {
    return this.parts.activity.runCount(task);
  }

  /** Data changes that reached a task's triggers so far. */
  changeCount(task: string): number {
    return this.parts.activity.changeCount(task);
  }

  /** Stops watching, cancels runs in progress (Terraform gets SIGINT), waits up to `graceMs`. */
  async stop(graceMs = 10_000): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    this.runs.queue.close();
    for (const e of this.parts.tasks.all()) this.triggers.stop(e);
    this.runs.cancelAll();
    await atMost(this.runs.queue.idle(), graceMs);
    await this.parts.runner.close();
  }

  // ---- operations (API) ---------------------------------------------------------------------

  /**
   * Queues a run of a task now (skips the buffer). With `force`, the run applies even when its inputs
   * equal what was applied last (the applied key is forgotten first): after a state was lost or the
   * infrastructure was changed by hand.
   */
  runNow(name: string, opts: { force?: boolean } = {}): Promise<RunOutcome> {
    this.parts.tasks.get(name);
    if (opts.force) {
      this.parts.runner.state.forgetAppliedKey(name);
      this.parts.log.info(`task '${name}': a forced run: it applies whatever the no-op skip would say`, { task: name });
    }
    return this.runs.request(name, "api");
  }

  /** Checks one task for drift now, in its queue slot (`cts drift`, the API, the timer). */
  checkDrift(name: string): Promise<RunOutcome> {
    return this.parts.tasks.get(name).enabled ? this.runs.requestDrift(name) : Promise.resolve(refused(name, "disabled"));
  }

  /** Plans one task. */
  planTask(name: string): Promise<RunOutcome> {
    return this.runs.execute(this.parts.tasks.get(name), "plan");
  }

  /** Enables or disables a task; enabling runs it (unless `run: false`: the caller runs it itself). */
  setEnabled(name: string, enabled: boolean, opts: { run?: boolean } = {}): Promise<void> {
    return this.changes.setEnabled(name, enabled, opts);
  }

  /** Adds a module task (from the API); validates it first. */
  addModuleTask(spec: ModuleTaskSpec): void {
    this.changes.add(spec);
  }

  /** Replaces an API task's spec once it is not running (task-changes.ts); queues no run. */
  replaceModuleTask(name: string, spec: ModuleTaskSpec): Promise<void> {
    return this.changes.replace(name, spec);
  }

  /** Plans a module task that is not kept (POST /v1/tasks?run=inspect); removes its working dir after. */
  dryRunModuleTask(spec: ModuleTaskSpec): Promise<RunOutcome> {
    return this.changes.dryRun(spec);
  }

  /** Deletes a task once it is not running; with `destroy`, destroys its infrastructure first. */
  deleteTask(name: string, opts: { destroy?: boolean } = {}): Promise<RunOutcome | undefined> {
    return this.changes.delete(name, opts);
  }

  /** Approves the held plan and runs the task now: the outcome of that run (applied, or held again). */
  async approve(name: string): Promise<RunOutcome> {
    const e = this.parts.tasks.get(name);
    const held = this.parts.runner.holds.approve(name);
    if (!held) throw notHeld(name);
    this.parts.log.info(`task '${name}': the held plan was approved (${held.summary.add} to add, ${held.summary.change} to change, ${held.summary.destroy} to destroy); applying it`, { task: name });
    if (!e.enabled) return refused(name, "disabled");
    return this.runs.request(name, "approve");
  }

  /** Rejects the held plan: discarded, recorded as an event; the same inputs are not planned again. */
  async reject(name: string): Promise<HeldPlan> {
    this.parts.tasks.get(name);
    const held = await this.parts.runner.reject(name);
    if (!held) throw notHeld(name);
    this.chains.rejected(name);
    this.parts.log.warn(`task '${name}': the held plan was rejected and discarded; nothing was applied. The task plans again when its inputs change`, { task: name });
    this.record(
      makeEvent(name, new Date(), {
        success: false,
        outcome: "rejected",
        error: { message: `the held plan (${held.summary.add} to add, ${held.summary.change} to change, ${held.summary.destroy} to destroy) was rejected; nothing was applied` },
        changes: held.summary,
        ...(held.resources.length ? { resources: held.resources } : {}),
      }),
    );
    return held;
  }

  // ---- high availability --------------------------------------------------------------------

  /** Whether the controller is paused. */
  get isPaused(): boolean {
    return this.paused;
  }

  /**
   * Stops watching and running without closing anything (a leader that became a follower): runs
   * in progress and their retry waits are cancelled, queued runs dropped. Waits up to `graceMs`.
   */
  async pause(graceMs = 10_000): Promise<void> {
    this.paused = true;
    // Shared mode: a paused instance owns nothing; it takes tasks again one lock at a time.
    this.owned.clear();
    this.watching = false;
    for (const e of this.parts.tasks.all()) {
      this.triggers.stop(e);
      this.runs.drop(e.name);
    }
    this.runs.cancelAll();
    // A run in progress took its own waiters when it started; the rest wait for dropped runs.
    for (const name of this.runs.waiting()) this.runs.answer(name, refused(name, "paused"));
    this.chains.reset();
    await atMost(this.runs.queue.idle(), graceMs);
    // A follower keeps no provider processes and lets its synthesis worker end when idle: the
    // leader's runs may need the memory, and nothing runs here.
    this.parts.runner.keepWarm(false);
    await this.parts.runner.coolDown().catch((err) => this.parts.log.warn(`stopping warm provider processes: ${messageOf(err)}`));
  }

  /**
   * The lock this instance ran tasks under is lost (its session is gone, or may be given away):
   * every run in progress is cancelled at once, before anything else, with a deadline its
   * Terraform must be gone by (`killWithinMs` from now; none left: killed at once, no graceful
   * stop that would save state). Synchronous, so a process resumed after a pause kills its
   * Terraform before it handles anything else. `pause` follows. Returns how many runs it cancelled.
   */
  fence(killWithinMs: number): number {
    const reason: FencedCancel = { fenced: true, killBy: performance.now() + Math.max(0, killWithinMs) };
    return this.runs.cancelAll(reason);
  }

  /**
   * Leaves the paused state and runs every task once, then watches. A task whose inputs equal what
   * the task state says was applied (a new leader: what the previous one applied) is a no-op.
   */
  async resume(): Promise<void> {
    if (this.stopped) return;
    this.paused = false;
    await this.watch();
  }

  /**
   * Makes tasks, events and held plans match a stored state; runs nothing, writes nothing. A paused
   * controller takes all of it; in shared mode the tasks this instance owns are left alone (it is
   * their author). With `applied` (a new leader), what the stored state says was applied replaces
   * what this instance knew: another instance may have applied since.
   */
  restore(stored: StoredState, opts: { applied?: boolean } = {}): string[] {
    if (this.watching && !this.owned.shared) throw new CtsError("CTS_INTERNAL", "internal", "restore() needs a paused controller");
    const problems = this.parts.tasks.restore(stored.tasks.values(), stored.events, this.events, this.owned.set);
    this.parts.runner.state.restore?.(stored, { ...(this.owned.set ? { except: this.owned.set } : {}), ...(opts.applied ? { applied: true } : {}) });
    return problems;
  }

  // ---- shared cluster mode ------------------------------------------------------------------

  /** Whether this instance may run `name` now (always, outside shared mode). */
  mine(name: string): boolean {
    return this.owned.mine(name);
  }

  /** Task chains: the chain `name` runs in, named by its first task (its own name outside a chain); shared mode gives a chain one owner. */
  chainOf(name: string): string {
    return chainIdOf(name, this.parts.tasks.all().map((e) => ({ name: e.name, after: e.task.after })));
  }

  /** Shared mode: from now on only owned tasks watch and run; call before resume(). */
  shareTasks(): void {
    this.owned.share();
  }

  /** Names of the tasks this instance owns (shared mode), or every task. */
  ownedNames(): string[] {
    return this.owned.names(() => this.taskNames());
  }

  /**
   * Shared mode: this instance now holds the task's lock. Forgets the applied hash (the previous
   * owner may have applied since), starts its triggers and runs it once.
   */
  own(name: string): void {
    if (this.owned.take(name) && this.watching) this.changes.takeOver(name);
  }

  /** Shared mode: the task moves away. Stops its triggers, cancels its run and waits (up to `graceMs`) until it is not running. */
  async disown(name: string, graceMs = 10_000): Promise<void> {
    if (this.owned.release(name)) await this.changes.handOver(name, graceMs);
  }
}

/** PLAN_NOT_HELD for approve/reject of a task that holds no plan. */
function notHeld(name: string): CtsError {
  // 409: the task exists, but its state does not allow the call.
  return new CtsError("PLAN_NOT_HELD", "usage", `holds no plan waiting for approval.`, { task: name, detail: { status: 409 } });
}
