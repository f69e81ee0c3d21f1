import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { LoadedConfig } from "../config/load.ts";
import { CtsError, messageOf, toCtsError } from "../errors.ts";
import type { Logger } from "../log.ts";
import { parseCron } from "./cron.ts";
import { EventStore, makeEvent, type TaskEvent, type TaskStatus } from "./events.ts";
import { WorkQueue } from "./work-queue.ts";
import type { TaskEntry } from "./task-entry.ts";
import { BufferPeriod, normalizeBufferPeriod, DEFAULT_BUFFER_PERIOD, type BufferPeriodSettings } from "../watch/buffer.ts";
import type { CatalogReader, Watcher } from "../watch/types.ts";
import type { TerraformDriver, RunResult } from "../terraform/types.ts";
import type { Synthesizer } from "../synth/synthesizer.ts";
import type { SynthResult } from "../synth/synthesize.ts";
import { APPLIED_HASH_FILE } from "../synth/paths.ts";
import type { ModuleTaskSpec } from "../synth/task-ref.ts";
import { ModuleTask } from "../task/module-task.ts";
import { allSources, fieldOf } from "../task/sources.ts";
import { secretEnv } from "../task/secrets.ts";
import { taskProblems, throwProblems } from "../task/validate.ts";
import type { AnyTaskInput } from "../task/task.ts";

/** Everything the controller needs, wired by the composition root. */
export interface ControllerDeps {
  loaded: LoadedConfig;
  reader: CatalogReader;
  driver: TerraformDriver & { taskDir(task: string): string };
  synthesizer: Synthesizer;
  log: Logger;
  /** Present in daemon mode. */
  watcher?: Watcher;
  /** Turns every buffer period off (`--no-buffer`, tests). */
  bufferOff?: boolean;
  /** Retries after a failed apply (default 2, as CTS); delays double from retryDelayMs. */
  retries?: number;
  retryDelayMs?: number;
  /** Events kept per task (default 5). */
  eventsKept?: number;
}

/** What a run did. */
export interface RunOutcome {
  task: string;
  ok: boolean;
  /** applied | no-op | planned | destroyed | failed | cancelled | disabled */
  outcome: string;
  result?: RunResult;
  synth?: SynthResult;
  error?: CtsError;
}

/** A change made to a task at run time (API), for whoever persists them (high availability). */
export interface TaskChange {
  kind: "created" | "replaced" | "enabled" | "disabled" | "deleted";
  task: string;
  origin: "config" | "api";
}

/** Observers of the controller (high availability persists through these). Called synchronously. */
export interface ControllerHooks {
  /** A run (or a fatal watch error) recorded an event. */
  onEvent?(event: TaskEvent): void;
  /** A task was created, replaced, enabled, disabled or deleted. */
  onTaskChange?(change: TaskChange): void;
}

/** One task of a stored state (high availability): an enabled override, a tombstone, or an API task. */
export interface RestoredTask {
  name: string;
  enabled: boolean;
  /** The spec of a task created through the API. */
  spec?: ModuleTaskSpec;
  /** A config task that was deleted through the API. */
  deleted?: boolean;
}

/** A task as the API and CLI see it. */
export interface TaskView {
  name: string;
  description: string;
  enabled: boolean;
  origin: "config" | "api";
  status: TaskStatus;
  condition: unknown;
  inputs: unknown;
  module?: string;
  version?: string;
  variables?: Record<string, unknown>;
  bufferPeriod: { enabled: boolean; min: number; max: number };
  running: boolean;
  /** The task's class name (what the API shows instead of a module for task classes). */
  className: string;
  /** The plain-data spec of a module task created through the API (PATCH replaces it). */
  spec?: ModuleTaskSpec;
}

/**
 * The runtime: keeps tasks, watches their sources, buffers changes, runs them through a work queue
 * (synthesize → skip when unchanged → apply), records events. Failing tasks never stop the others.
 */
export class Controller {
  readonly events: EventStore;
  private readonly entries = new Map<string, TaskEntry>();
  private readonly queue: WorkQueue;
  private readonly log: Logger;
  private watching = false;
  private stopped = false;
  /** Paused (a high-availability follower): nothing watches, queued runs are dropped. */
  private paused = false;
  private hooks: ControllerHooks = {};
  private readonly globalBuffer: BufferPeriodSettings;

  constructor(private readonly deps: ControllerDeps) {
    this.log = deps.log;
    this.events = new EventStore(deps.eventsKept);
    this.queue = new WorkQueue((name) => this.runQueued(name), deps.loaded.config.concurrency ?? 4);
    const g = deps.loaded.config.bufferPeriod;
    this.globalBuffer = g === false ? { ...DEFAULT_BUFFER_PERIOD, enabled: false } : normalizeBufferPeriod(g, "bufferPeriod");
    for (const task of deps.loaded.config.tasks) {
      this.entries.set(task.name, {
        name: task.name,
        task,
        ref: { kind: "config", configFile: deps.loaded.file, name: task.name },
        origin: "config",
        enabled: task.enabled,
        subs: [],
      });
    }
  }

  /** Names of every task. */
  taskNames(): string[] {
    return [...this.entries.keys()];
  }

  /** A task's view, or undefined. */
  view(name: string): TaskView | undefined {
    const e = this.entries.get(name);
    if (!e) return undefined;
    const t = e.task as Partial<ModuleTask>;
    return {
      name: e.name,
      description: e.task.description,
      enabled: e.enabled,
      origin: e.origin,
      status: this.events.status(e.name),
      condition: e.task.condition,
      inputs: e.task.inputs,
      ...(typeof t.module === "string" ? { module: t.module, version: t.version, variables: t.variables } : {}),
      bufferPeriod: this.bufferFor(e),
      running: this.queue.isRunning(e.name),
      className: e.task.constructor.name,
      ...(e.ref.kind === "module" ? { spec: e.ref.spec } : {}),
    };
  }

  // ---- modes -------------------------------------------------------------------------------

  /** Daemon: run every enabled task once, then watch. Returns once the first runs are queued. */
  async watch(): Promise<void> {
    if (!this.deps.watcher) throw new CtsError("CTS_INTERNAL", "internal", "watch() needs a watcher");
    this.watching = true;
    this.log.info("ctrl: executing all tasks once through");
    for (const e of this.entries.values()) if (e.enabled) this.startWatching(e);
    for (const e of this.entries.values()) if (e.enabled) this.queue.enqueue(e.name);
  }

  /** Runs every enabled task once (no watching); resolves with each outcome. */
  async once(): Promise<RunOutcome[]> {
    this.log.info("ctrl: executing all tasks once through");
    const names = [...this.entries.values()].filter((e) => e.enabled).map((e) => e.name);
    return Promise.all(names.map((n) => this.runTask(n, "apply")));
  }

  /** Plans the named tasks (default all enabled). */
  async inspect(names?: string[]): Promise<RunOutcome[]> {
    const list = names?.length ? names : [...this.entries.values()].filter((e) => e.enabled).map((e) => e.name);
    for (const n of list) this.entry(n);
    const out: RunOutcome[] = [];
    for (const n of list) out.push(await this.runTask(n, "plan"));
    return out;
  }

  /** Waits until no run is queued or running. */
  idle(): Promise<void> {
    return this.queue.idle();
  }

  /** Stops watching, cancels runs in progress (Terraform gets SIGINT), waits up to `graceMs`. */
  async stop(graceMs = 10_000): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    this.queue.close();
    for (const e of this.entries.values()) this.stopWatching(e);
    for (const e of this.entries.values()) e.abort?.abort();
    await Promise.race([this.queue.idle(), new Promise((r) => setTimeout(r, graceMs).unref())]);
    await this.deps.synthesizer.close();
  }

  // ---- operations (API, CLI) -----------------------------------------------------------------

  /** Queues a run of a task now (skips the buffer). */
  runNow(name: string): Promise<RunOutcome> {
    this.entry(name);
    return this.runTask(name, "apply");
  }

  /** Enables or disables a task; enabling runs it (unless `run: false`: the caller runs it itself). */
  async setEnabled(name: string, enabled: boolean, opts: { run?: boolean } = {}): Promise<void> {
    const e = this.entry(name);
    if (e.enabled === enabled) return;
    e.enabled = enabled;
    if (enabled) {
      if (this.watching) this.startWatching(e);
      if (opts.run !== false) this.queue.enqueue(name);
    } else {
      this.stopWatching(e);
      this.queue.forget(name);
    }
    this.hooks.onTaskChange?.({ kind: enabled ? "enabled" : "disabled", task: name, origin: e.origin });
  }

  /** Plans one task (with optional replacement declaration, for dry runs). */
  planTask(name: string): Promise<RunOutcome> {
    this.entry(name);
    return this.runTask(name, "plan");
  }

  /** Adds a module task (from the API); validates it first. */
  addModuleTask(spec: ModuleTaskSpec): TaskEntry {
    if (this.entries.has(spec.name)) throw new CtsError("TASK_EXISTS", "usage", `a task named '${spec.name}' already exists. Delete it first or pick another name.`, { task: spec.name });
    const task = new ModuleTask(spec);
    throwProblems(`task '${spec.name}'`, taskProblems(task), "TASK_INVALID");
    const e: TaskEntry = { name: spec.name, task, ref: { kind: "module", spec }, origin: "api", enabled: task.enabled, subs: [] };
    this.entries.set(spec.name, e);
    if (this.watching && e.enabled) this.startWatching(e);
    this.hooks.onTaskChange?.({ kind: "created", task: spec.name, origin: "api" });
    return e;
  }

  /**
   * Replaces the spec of a module task created through the API (PATCH with more than `enabled`):
   * waits until it is not running, swaps the declaration and re-watches. It does not queue a run:
   * the caller decides (the API runs it now, or in the background).
   */
  async replaceModuleTask(name: string, spec: ModuleTaskSpec): Promise<TaskEntry> {
    const e = this.entry(name);
    if (e.ref.kind !== "module" || e.origin !== "api")
      throw new CtsError("TASK_NOT_REPLACEABLE", "usage", `is defined in code; only 'enabled' can change at run time. Change the task in the config and restart.`, { task: name });
    if (spec.name !== name) throw new CtsError("TASK_INVALID", "usage", `cannot be renamed to '${spec.name}'. Create a new task instead.`, { task: name });
    const task = new ModuleTask(spec);
    throwProblems(`task '${name}'`, taskProblems(task), "TASK_INVALID");
    this.stopWatching(e);
    this.queue.forget(name);
    await this.queue.settled(name);
    e.task = task;
    e.ref = { kind: "module", spec };
    e.enabled = task.enabled;
    if (this.watching && e.enabled) this.startWatching(e);
    this.hooks.onTaskChange?.({ kind: "replaced", task: name, origin: "api" });
    return e;
  }

  /** Plans a module task that is not added (POST /v1/tasks?run=inspect). */
  async dryRunModuleTask(spec: ModuleTaskSpec): Promise<RunOutcome> {
    const task = new ModuleTask(spec);
    throwProblems(`task '${spec.name}'`, taskProblems(task), "TASK_INVALID");
    const e: TaskEntry = { name: spec.name, task, ref: { kind: "module", spec }, origin: "api", enabled: true, subs: [] };
    return this.execute(e, "plan");
  }

  /** Deletes a task once it is not running; with `destroy`, destroys its infrastructure first. */
  async deleteTask(name: string, opts: { destroy?: boolean } = {}): Promise<RunOutcome | undefined> {
    const e = this.entry(name);
    e.deleting = true;
    this.stopWatching(e);
    this.queue.forget(name);
    await this.queue.settled(name);
    let outcome: RunOutcome | undefined;
    if (opts.destroy) {
      outcome = await this.execute(e, "destroy");
      if (!outcome.ok) {
        e.deleting = false;
        if (this.watching && e.enabled) this.startWatching(e);
        throw outcome.error ?? new CtsError("TERRAFORM_FAILED", "external", "destroy failed", { task: name });
      }
    }
    this.entries.delete(name);
    this.events.delete(name);
    this.hooks.onTaskChange?.({ kind: "deleted", task: name, origin: e.origin });
    return outcome;
  }

  // ---- high availability ---------------------------------------------------------------------

  /** Sets the observers (one set; high availability installs it). */
  setHooks(hooks: ControllerHooks): void {
    this.hooks = hooks;
  }

  /** Whether the controller is paused. */
  get isPaused(): boolean {
    return this.paused;
  }

  /**
   * Stops watching and running without closing anything (a leader that became a follower): runs
   * in progress are cancelled (Terraform gets SIGINT), queued runs dropped. Waits up to `graceMs`.
   */
  async pause(graceMs = 10_000): Promise<void> {
    this.paused = true;
    this.watching = false;
    for (const e of this.entries.values()) {
      this.stopWatching(e);
      this.queue.forget(e.name);
    }
    for (const e of this.entries.values()) e.abort?.abort();
    // Callers waiting for a run that was dropped from the queue get their answer now (a run in
    // progress took its own waiters when it started).
    for (const [name, waiters] of [...this.onceWaiters]) {
      this.onceWaiters.delete(name);
      const error = new CtsError("CTS_PAUSED", "external", "was not run: this instance stopped running tasks (it is not the high-availability leader).", { task: name });
      for (const w of waiters) w({ task: name, ok: false, outcome: "cancelled", error });
    }
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([this.queue.idle(), new Promise((r) => (timer = setTimeout(r, graceMs)))]);
    clearTimeout(timer);
  }

  /**
   * Leaves the paused state: runs every enabled task once, then watches (a new leader). Hashes
   * of earlier applies are forgotten: another instance may have applied since.
   */
  async resume(): Promise<void> {
    if (this.stopped) return;
    for (const e of this.entries.values()) e.lastAppliedHash = undefined;
    this.paused = false;
    await this.watch();
  }

  /**
   * Makes the tasks and events match a stored state (high availability), on a paused controller:
   * config tasks with their stored enabled flag or deleted, API tasks added, replaced or removed.
   * Runs nothing and calls no hook. Returns the stored tasks that could not be restored.
   */
  restore(tasks: Iterable<RestoredTask>, events: ReadonlyMap<string, TaskEvent[]>): string[] {
    if (this.watching) throw new CtsError("CTS_INTERNAL", "internal", "restore() needs a paused controller");
    const problems: string[] = [];
    const stored = new Map([...tasks].map((t) => [t.name, t]));
    for (const task of this.deps.loaded.config.tasks) {
      const rec = stored.get(task.name);
      if (rec?.spec && !rec.deleted) continue;
      if (rec?.deleted) {
        this.entries.delete(task.name);
        this.events.delete(task.name);
        continue;
      }
      let e = this.entries.get(task.name);
      if (!e || e.origin !== "config") {
        e = { name: task.name, task, ref: { kind: "config", configFile: this.deps.loaded.file, name: task.name }, origin: "config", enabled: task.enabled, subs: [] };
        this.entries.set(task.name, e);
      }
      e.enabled = rec ? rec.enabled : task.enabled;
    }
    for (const rec of stored.values()) {
      if (!rec.spec || rec.deleted) continue;
      const e = this.entries.get(rec.name);
      if (e?.origin === "api" && e.ref.kind === "module" && JSON.stringify(e.ref.spec) === JSON.stringify(rec.spec)) {
        e.enabled = rec.enabled;
        continue;
      }
      try {
        const task = new ModuleTask(rec.spec);
        throwProblems(`task '${rec.name}'`, taskProblems(task), "TASK_INVALID");
        this.entries.set(rec.name, { name: rec.name, task, ref: { kind: "module", spec: rec.spec }, origin: "api", enabled: rec.enabled, subs: [] });
      } catch (err) {
        problems.push(`task '${rec.name}' cannot be restored: ${messageOf(err)}`);
      }
    }
    for (const e of [...this.entries.values()]) {
      const rec = stored.get(e.name);
      if (e.origin === "api" && (!rec?.spec || rec.deleted)) {
        this.entries.delete(e.name);
        this.events.delete(e.name);
      }
    }
    for (const name of new Set([...this.entries.keys(), ...events.keys()])) {
      const list = events.get(name);
      if (list && this.entries.has(name)) this.events.restore(name, list);
      else this.events.delete(name);
    }
    return problems;
  }

  // ---- internals -----------------------------------------------------------------------------

  private record(event: TaskEvent): void {
    this.events.add(event);
    this.hooks.onEvent?.(event);
  }

  private entry(name: string): TaskEntry {
    const e = this.entries.get(name);
    if (!e || e.deleting) throw new CtsError("TASK_NOT_FOUND", "usage", `no task named '${name}'. List tasks with \`cts task list\`.`);
    return e;
  }

  private bufferFor(e: TaskEntry): BufferPeriodSettings {
    const own = e.task.bufferPeriod;
    if (this.deps.bufferOff || e.task.condition.kind === "schedule" || own === false) return { ...this.globalBuffer, enabled: false };
    return own ? normalizeBufferPeriod(own, `tasks.${e.name}.bufferPeriod`, { ...this.globalBuffer, enabled: true }) : this.globalBuffer;
  }

  private startWatching(e: TaskEntry): void {
    const watcher = this.deps.watcher!;
    if (e.subs.length > 0) return;
    const cond = e.task.condition;
    const sources = allSources(e.task);
    sources.forEach((source, i) => {
      const triggers = i === 0 && cond.kind !== "schedule";
      const sub = watcher.subscribe(source, {
        onChange: () => {
          if (triggers) this.trigger(e);
        },
        onError: (err, fatal) => {
          if (fatal) {
            this.log.error(`task '${e.name}': ${err.message}`, { task: e.name, code: err.code });
            this.record(makeEvent(e.name, new Date(), { success: false, outcome: "failed", error: { message: err.message } }));
          } else this.log.warn(`task '${e.name}': watching Consul: ${err.message}`, { task: e.name });
        },
      });
      e.subs.push({ field: fieldOf(source), source, sub });
    });
    if (cond.kind === "schedule") this.scheduleNext(e, parseCron(cond.cron));
    const b = this.bufferFor(e);
    if (b.enabled) e.buffer = new BufferPeriod(b, () => this.queue.enqueue(e.name));
  }

  private stopWatching(e: TaskEntry): void {
    for (const s of e.subs) s.sub.close();
    e.subs = [];
    e.buffer?.cancel();
    e.buffer = undefined;
    if (e.cronTimer) clearTimeout(e.cronTimer);
    e.cronTimer = undefined;
  }

  private scheduleNext(e: TaskEntry, cron: ReturnType<typeof parseCron>): void {
    const target = cron.next(new Date()).getTime();
    const arm = () => {
      // setTimeout cannot wait past ~24.8 days, so long waits are chained.
      e.cronTimer = setTimeout(() => {
        if (this.stopped || this.paused || !e.enabled) return;
        if (Date.now() + 5 < target) return arm();
        this.queue.enqueue(e.name);
        this.scheduleNext(e, cron);
      }, Math.min(Math.max(0, target - Date.now()), 2 ** 31 - 1));
      e.cronTimer.unref?.();
    };
    arm();
  }

  private trigger(e: TaskEntry): void {
    if (!e.enabled || this.stopped || this.paused || e.deleting) return;
    this.log.debug(`task '${e.name}': watched data changed`, { task: e.name });
    if (e.buffer) e.buffer.trigger();
    else this.queue.enqueue(e.name);
  }

  private async runQueued(name: string): Promise<void> {
    if (this.paused) {
      const waiters = this.onceWaiters.get(name) ?? [];
      this.onceWaiters.delete(name);
      const error = new CtsError("CTS_PAUSED", "external", "was not run: this instance stopped running tasks (it is not the high-availability leader).", { task: name });
      for (const w of waiters) w({ task: name, ok: false, outcome: "cancelled", error });
      return;
    }
    const e = this.entries.get(name);
    if (!e || e.deleting || !e.enabled) {
      // Whoever asked for this run (runNow, once) still gets an answer.
      const waiters = this.onceWaiters.get(name) ?? [];
      this.onceWaiters.delete(name);
      const error = e?.enabled === false ? new CtsError("TASK_DISABLED", "usage", "is disabled. Enable it first.", { task: name }) : new CtsError("TASK_NOT_FOUND", "usage", "was deleted.", { task: name });
      for (const w of waiters) w({ task: name, ok: false, outcome: e?.enabled === false ? "disabled" : "deleted", error });
      return;
    }
    await this.execute(e, "apply");
  }

  /** Runs a task outside the queue's buffering but still one at a time per task. */
  private runTask(name: string, mode: "apply" | "plan"): Promise<RunOutcome> {
    const e = this.entry(name);
    if (mode === "plan") return this.execute(e, "plan");
    return new Promise((resolve) => {
      const waiters = (this.onceWaiters.get(name) ?? []) as Array<(o: RunOutcome) => void>;
      waiters.push(resolve);
      this.onceWaiters.set(name, waiters);
      this.queue.enqueue(name);
    });
  }
  private readonly onceWaiters = new Map<string, Array<(o: RunOutcome) => void>>();

  private async input(e: TaskEntry, signal: AbortSignal): Promise<AnyTaskInput> {
    const input: AnyTaskInput = {};
    if (e.subs.length > 0) {
      for (const s of e.subs) {
        await s.sub.ready;
        (input as Record<string, unknown>)[s.field] = s.sub.current();
      }
      return input;
    }
    for (const source of allSources(e.task)) (input as Record<string, unknown>)[fieldOf(source)] = await this.deps.reader.read(source, signal);
    return input;
  }

  /** One run: snapshot inputs → synthesize → skip when unchanged → apply/plan/destroy → event. */
  private async execute(e: TaskEntry, mode: "apply" | "plan" | "destroy"): Promise<RunOutcome> {
    const start = new Date();
    const abort = new AbortController();
    if (mode !== "plan") e.abort = abort;
    // Callers of runNow() get the outcome of a run that started after they asked.
    const waiters = mode === "apply" ? (this.onceWaiters.get(e.name) ?? []) : [];
    if (mode === "apply") this.onceWaiters.delete(e.name);
    const outcome = await this.attempt(e, mode, abort.signal);
    if (mode !== "plan") {
      e.abort = undefined;
      const source = (e.task as Partial<ModuleTask>).module;
      const event = makeEvent(e.name, start, {
        success: outcome.ok,
        outcome: outcome.outcome as TaskEvent["outcome"],
        error: outcome.error ? { message: outcome.error.message } : null,
        config: { ...(source ? { source } : {}), services: servicesOf(e) },
        ...(outcome.result ? { changes: outcome.result.summary } : {}),
      });
      this.record(event);
      if (outcome.ok) this.log.info(`task '${e.name}': ${outcome.outcome}`, { task: e.name, ...(outcome.result?.summary ?? {}) });
      else this.log.error(`task '${e.name}': ${outcome.error?.message ?? outcome.outcome}`, { task: e.name });
    }
    for (const w of waiters) w(outcome);
    return outcome;
  }

  private async attempt(e: TaskEntry, mode: "apply" | "plan" | "destroy", signal: AbortSignal): Promise<RunOutcome> {
    const retries = mode === "apply" ? (this.deps.retries ?? 2) : 0;
    let delay = this.deps.retryDelayMs ?? 1000;
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.once1(e, mode, signal);
      } catch (err) {
        const error = toCtsError(err, "TASK_RUN_FAILED", e.name);
        // A failed or cancelled apply may have changed part of the infrastructure: the next run
        // must not be skipped as a no-op, even if its JSON equals the last applied one.
        if (mode !== "plan") e.lastAppliedHash = undefined;
        const cancelled = signal.aborted || error.code === "TERRAFORM_CANCELLED";
        if (cancelled || error.category === "usage" || attempt >= retries) {
          return { task: e.name, ok: false, outcome: cancelled ? "cancelled" : "failed", error };
        }
        this.log.warn(`task '${e.name}': attempt ${attempt + 1} failed, retrying in ${delay} ms: ${messageOf(err)}`, { task: e.name });
        await new Promise((r) => setTimeout(r, delay * (0.8 + Math.random() * 0.4)));
        delay *= 2;
        if (signal.aborted) return { task: e.name, ok: false, outcome: "cancelled", error };
      }
    }
  }

  private async once1(e: TaskEntry, mode: "apply" | "plan" | "destroy", signal: AbortSignal): Promise<RunOutcome> {
    const { loaded, driver, synthesizer } = this.deps;
    const input = await this.input(e, signal);
    const taskDir = driver.taskDir(e.name);
    const synth = await synthesizer.synth(e.ref, input, {
      backend: loaded.config.driver?.terraform?.backend,
      configDir: loaded.dir,
      taskDir,
      providerVersions: loaded.config.driver?.terraform?.providerVersions,
    });
    if (mode === "apply" && synth.hash === e.lastAppliedHash) return { task: e.name, ok: true, outcome: "no-op", synth };
    // Secrets are read at every run (rotation needs no restart) and reach Terraform only as TF_VAR_ env.
    const ws = { task: e.name, json: synth.json, env: secretEnv(e.name, e.task.secrets) };
    const onOutput = (line: string) => this.log.debug(`[${e.name}] ${line}`, { task: e.name });
    if (mode === "plan") {
      const result = await driver.plan(ws, { signal, onOutput });
      return { task: e.name, ok: true, outcome: "planned", result, synth };
    }
    if (mode === "destroy") {
      const result = await driver.destroy(ws, { signal, onOutput });
      e.lastAppliedHash = undefined;
      return { task: e.name, ok: true, outcome: "destroyed", result, synth };
    }
    const result = await driver.apply(ws, { signal, onOutput });
    e.lastAppliedHash = synth.hash;
    await writeFile(join(taskDir, APPLIED_HASH_FILE), synth.hash + "\n", { mode: 0o640 }).catch(() => undefined);
    return { task: e.name, ok: true, outcome: "applied", result, synth };
  }
}

function servicesOf(e: TaskEntry): string[] {
  const c = e.task.condition;
  if (c.kind === "services") return c.query.names ?? [`regexp:${c.query.regexp}`];
  return [];
}
