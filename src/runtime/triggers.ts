import { isUnavailable } from "../consul/reachability.ts";
import { every, systemClock, type Clock } from "../time/clock.ts";
import type { CtsError } from "../errors/cts-error.ts";
import type { Logger } from "../log/logger.ts";
import type { Metrics } from "../metrics/metrics.ts";
import { allSources, fieldOf } from "../task/sources.ts";
import { BufferPeriod, DEFAULT_BUFFER_PERIOD, normalizeBufferPeriod, type BufferPeriodConfig, type BufferPeriodSettings } from "../watch/buffer.ts";
import { traceChange } from "../trace/tracing.ts";
import type { Watcher } from "../watch/types.ts";
import { followCron, parseCron } from "../task/cron.ts";
import { driftSettings, type DriftSettings } from "./drift.ts";
import type { DriftCheckOption } from "../task/task.ts";
import type { SkippedServices } from "./skipped-services.ts";
import type { Activity } from "./events.ts";
import type { TaskRuns } from "./runs.ts";
import type { TaskEntry } from "./task-entry.ts";
import type { WatchedData, WatchedSource } from "./watched-data.ts";
import { taskTemplateDependencies, type TemplateDependency } from "../task/provider-templates.ts";
import { firesOnAnyChange, snapshotOf, triggerFires, triggerText, type InstanceSnapshot } from "../task/service-trigger.ts";
import type { ServiceInstance } from "../consul/types.ts";
import { taskFilterError } from "../task/filter-error.ts";
import { configFilesOf } from "./task-input.ts";

/** What the triggers ask of the controller (Controller implements it). */
export interface TriggerGate {
  /** Whether triggers may fire now (not stopped, not paused). */
  readonly active: boolean;
  /** A watch failed in a way retrying will not fix (an ACL, a bad query): recorded as a failed event. */
  watchFailed(name: string, err: CtsError): void;
}

/** What starts runs besides the tasks' own settings (from the config and the command's flags). */
export interface TriggerSettings {
  /** Present in daemon mode. */
  watcher?: Watcher;
  /** The config's global buffer period (false: off). */
  globalBuffer: BufferPeriodConfig | false | undefined;
  /** Turns every buffer period off (`--no-buffer`, tests). */
  bufferOff?: boolean;
  /** The config's global drift check (absent or false: off unless a task sets its own). */
  globalDrift?: DriftCheckOption | false;
  /** Told when a service Consul cannot serve is left out of a task's watched data. */
  skipped?: SkippedServices;
  /** Values of provider templates (Vault secrets, Consul keys): a change re-runs the tasks using it (daemon mode). */
  templates?: { subscribe(deps: Iterable<TemplateDependency>, onChange: () => void): () => void };
  /** The clock of buffer periods, cron schedules and drift check timers (default: the real one; tests pass a fake). */
  clock?: Clock;
  /** Where the watched tasks' subscriptions are kept for their runs to read (task-input.ts). */
  watched?: WatchedData;
}

/** What the triggers hold for one watched task: its schedule, buffer period, drift timer and template subscription. */
interface TaskTriggers {
  subs: WatchedSource[];
  templateSub?: () => void;
  buffer?: BufferPeriod;
  cronTimer?: () => void;
  driftTimer?: () => void;
  /** An event trigger's view of the condition's last data (register, deregister, count; absent for "change"). */
  snapshot?: InstanceSnapshot;
}

/** What the triggers feed and ask. */
export interface TriggerDeps extends TriggerSettings {
  /** Where every trigger ends: a request for a run or a drift check (runs.ts). */
  runs: TaskRuns;
  /** Whether triggers may fire, and where a failed watch is reported (the controller). */
  gate: TriggerGate;
  /** Counts the data changes that reached a task (tests wait on it). */
  activity: Activity;
  log: Logger;
  /** Where data changes and buffer waits are measured. */
  metrics?: Metrics;
  /** Told when a task's data changed, before its buffer period: the synthesizer gets ready meanwhile. */
  warm?: (e: TaskEntry) => void;
}

/**
 * A task's triggers: its Consul subscriptions (the condition's source triggers, module inputs only
 * refresh data), its cron schedule, its buffer period and its drift check timer, all ending in a
 * request to the queue. The path of a data change: the watcher's view calls onChange → fire →
 * the buffer period (src/watch/buffer.ts) or at once → runs.enqueue (runs.ts).
 */
export class Triggers {
  private readonly global: BufferPeriodSettings;
  /** When each task's running buffer period started (for the buffer-wait metric). */
  private readonly bufferSince = new Map<string, number>();
  private readonly clock: Clock;
  /** What each watched task's triggers hold (one owner: this class). */
  private readonly held = new Map<string, TaskTriggers>();

  constructor(private readonly deps: TriggerDeps) {
    this.clock = deps.clock ?? systemClock;
    const g = deps.globalBuffer;
    this.global = g === false ? { ...DEFAULT_BUFFER_PERIOD, enabled: false } : normalizeBufferPeriod(g, "bufferPeriod");
  }

  /** The buffer period a task runs with (schedule tasks never buffer, as in CTS). */
  bufferFor(e: TaskEntry): BufferPeriodSettings {
    const own = e.task.bufferPeriod;
    if (this.deps.bufferOff || e.task.condition.kind === "schedule" || own === false) return { ...this.global, enabled: false };
    return own ? normalizeBufferPeriod(own, `tasks.${e.name}.bufferPeriod`, { ...this.global, enabled: true }) : this.global;
  }

  /** The drift check a task runs with (its own `driftCheck` over the config's). */
  driftFor(e: TaskEntry): DriftSettings {
    return driftSettings(this.deps.globalDrift, e.task.driftCheck);
  }

  /** Whether any task's buffer period is waiting to fire. */
  buffering(): boolean {
    for (const t of this.held.values()) if (t.buffer?.pending) return true;
    return false;
  }

  /** Starts watching a task's sources (no-op when watching already). */
  start(e: TaskEntry): void {
    const watcher = this.deps.watcher;
    if (!watcher || this.held.has(e.name)) return;
    const subs: WatchedSource[] = [];
    const t: TaskTriggers = { subs };
    this.held.set(e.name, t);
    const cond = e.task.condition;
    // An event trigger (register, deregister, a count threshold) compares each change of the
    // condition's instances with the one before it (src/task/service-trigger.ts).
    const trigger = cond.kind === "services" && !firesOnAnyChange(cond.trigger) ? cond.trigger : undefined;
    allSources(e.task).forEach((source, i) => {
      const triggers = i === 0 && cond.kind !== "schedule";
      const sub = watcher.subscribe(source, {
        onChange: () => {
          if (!triggers) return;
          if (trigger === undefined) return this.fire(e);
          const next = snapshotOf((sub.current() ?? []) as ServiceInstance[]);
          const why = triggerFires(trigger, t.snapshot, next);
          t.snapshot = next;
          this.fire(e, why ?? null, triggerText(trigger));
        },
        onError: (err, fatal) => {
          if (fatal) this.deps.gate.watchFailed(e.name, taskFilterError(e.name, source, err, configFilesOf(e)) as CtsError);
          // Consul unavailable (unreachable, no leader): the one client logs it once (and reminds); per task it is debug.
          else if (isUnavailable(err)) this.deps.log.debug(`task '${e.name}': watching Consul: ${err.message}`, { task: e.name });
          else this.deps.log.warn(`task '${e.name}': watching Consul: ${err.message}`, { task: e.name });
        },
        onSkipped: (service, err) => this.deps.skipped?.report(e.name, service, err),
      });
      subs.push({ field: fieldOf(source), source, sub });
      // The baseline is the first answer (the task's start-up run covers what came before it).
      if (triggers && trigger !== undefined)
        sub.ready.then(
          () => {
            if (t.snapshot === undefined && this.held.get(e.name) === t) t.snapshot = snapshotOf((sub.current() ?? []) as ServiceInstance[]);
          },
          () => {},
        );
    });
    this.deps.watched?.set(e.name, subs);
    if (cond.kind === "schedule")
      t.cronTimer = followCron(parseCron(cond.cron), this.clock, () => {
        if (!this.deps.gate.active || !e.enabled) return false;
        this.deps.runs.enqueue(e.name);
        return true;
      });
    // CTS re-renders a provider block whose secret or key changed and runs the tasks using it.
    const deps = taskTemplateDependencies(e.task as { secrets?: unknown; providers?: unknown });
    if (deps.size && this.deps.templates)
      t.templateSub = this.deps.templates.subscribe(deps.values(), () => {
        this.deps.log.info(`task '${e.name}': a secret or key its providers use changed`, { task: e.name });
        this.fire(e);
      });
    const b = this.bufferFor(e);
    if (b.enabled)
      t.buffer = new BufferPeriod(b, () => {
        const since = this.bufferSince.get(e.name);
        this.bufferSince.delete(e.name);
        if (since !== undefined) this.deps.metrics?.bufferWaited(e.name, (performance.now() - since) / 1000);
        this.deps.runs.enqueue(e.name);
      }, this.deps.clock);
    const drift = this.driftFor(e);
    if (drift.enabled) {
      // A plain interval: a check that is still queued when the next tick comes collapses with it.
      t.driftTimer = every(this.clock, Math.min(drift.everyMs, 2 ** 31 - 1), () => {
        if (e.enabled && !e.deleting && this.deps.gate.active) void this.deps.runs.requestDrift(e.name);
      });
    }
  }

  /** Stops a task's subscriptions, buffer and schedule. */
  stop(e: TaskEntry): void {
    const t = this.held.get(e.name);
    this.held.delete(e.name);
    this.bufferSince.delete(e.name);
    if (!t) return;
    this.deps.watched?.set(e.name, []);
    for (const s of t.subs) s.sub.close();
    t.templateSub?.();
    t.buffer?.cancel();
    t.cronTimer?.();
    t.driftTimer?.();
  }

  /**
   * A change reached the task. `why` is an event trigger's decision (a reason it fires, or null:
   * the change is seen but does not run the task); absent for any-change triggers.
   */
  private fire(e: TaskEntry, why?: string | null, trigger?: string): void {
    if (!e.enabled || e.deleting || !this.deps.gate.active) return;
    this.deps.activity.changed(e.name);
    if (why === null) {
      this.deps.log.debug(`task '${e.name}': watched data changed; its trigger (${trigger}) does not fire on this change`, { task: e.name });
      return;
    }
    this.deps.metrics?.taskChanged(e.name);
    this.deps.log.debug(`task '${e.name}': watched data changed${why ? ` (trigger ${trigger}: ${why})` : ""}`, { task: e.name });
    this.deps.warm?.(e);
    traceChange(e.name, why ? `${e.task.condition.kind}: ${why}` : `${e.task.condition.kind}: the data changed`);
    const buffer = this.held.get(e.name)?.buffer;
    if (buffer) {
      if (!buffer.pending) this.bufferSince.set(e.name, performance.now());
      buffer.trigger();
    } else this.deps.runs.enqueue(e.name);
  }
}
