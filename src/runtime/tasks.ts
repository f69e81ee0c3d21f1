import type { LoadedConfig } from "../config/load.ts";
import { CtsError, messageOf } from "../errors/cts-error.ts";
import type { ModuleTask } from "../task/module-task.ts";
import type { ModuleTaskSpec } from "../synth/task-ref.ts";
import type { EventStore, TaskEvent } from "./events.ts";
import type { RestoredTask, TaskView } from "./interfaces.ts";
import { configEntry, moduleEntry, notFound, type TaskEntry } from "./task-entry.ts";

/**
 * The task registry: which tasks exist, where they came from and whether they are enabled. It holds
 * data only; starting and stopping their triggers and runs is the controller's job.
 */
export class TaskRegistry {
  private readonly entries = new Map<string, TaskEntry>();

  constructor(private readonly loaded: LoadedConfig) {
    for (const task of loaded.config.tasks) this.entries.set(task.name, configEntry(loaded, task));
  }

  /** Names of every task. */
  names(): string[] {
    return [...this.entries.keys()];
  }

  /** Every entry. */
  all(): TaskEntry[] {
    return [...this.entries.values()];
  }

  /** Every enabled entry. */
  enabled(): TaskEntry[] {
    return this.all().filter((e) => e.enabled);
  }

  /** An entry, deleting or not, or undefined. */
  find(name: string): TaskEntry | undefined {
    return this.entries.get(name);
  }

  /** A live entry; throws TASK_NOT_FOUND (also while it is being deleted). */
  get(name: string): TaskEntry {
    const e = this.entries.get(name);
    if (!e || e.deleting) throw notFound(name);
    return e;
  }

  /** Adds a module task from the API; validates it, refuses a taken name. */
  create(spec: ModuleTaskSpec): TaskEntry {
    if (this.entries.has(spec.name))
      throw new CtsError("TASK_EXISTS", "usage", `a task named '${spec.name}' already exists. Delete it first or pick another name.`, { task: spec.name });
    const e = moduleEntry(spec);
    this.entries.set(spec.name, e);
    return e;
  }

  /** Checks that an API task may take `spec`; returns the validated replacement (not yet swapped in). */
  replacement(name: string, spec: ModuleTaskSpec): TaskEntry {
    const e = this.get(name);
    if (e.ref.kind !== "module" || e.origin !== "api")
      throw new CtsError("TASK_NOT_REPLACEABLE", "usage", `is defined in code; only 'enabled' can change at run time. Change the task in the config and restart.`, { task: name });
    if (spec.name !== name) throw new CtsError("TASK_INVALID", "usage", `cannot be renamed to '${spec.name}'. Create a new task instead.`, { task: name });
    return moduleEntry(spec);
  }

  /** Swaps a validated replacement's declaration into the live entry. */
  swap(e: TaskEntry, next: TaskEntry): void {
    e.task = next.task;
    e.ref = next.ref;
    e.enabled = next.enabled;
  }

  /** Forgets a task. */
  remove(name: string): void {
    this.entries.delete(name);
  }

  /** A task's view for the API and CLI, or undefined. */
  view(name: string, state: { status: TaskView["status"]; stale?: TaskView["stale"]; running: boolean; bufferPeriod: TaskView["bufferPeriod"]; drift?: TaskView["drift"] }): TaskView | undefined {
    const e = this.entries.get(name);
    if (!e) return undefined;
    const t = e.task as Partial<ModuleTask>;
    return {
      name: e.name,
      description: e.task.description,
      enabled: e.enabled,
      origin: e.origin,
      status: state.status,
      ...(state.stale ? { stale: state.stale } : {}),
      condition: e.task.condition,
      inputs: e.task.inputs,
      ...(typeof t.module === "string" ? { module: t.module, version: t.version, variables: t.variables } : {}),
      bufferPeriod: state.bufferPeriod,
      running: state.running,
      className: e.task.constructor.name,
      ...(e.ref.kind === "module" ? { spec: e.ref.spec } : {}),
      ...(e.task.after?.length ? { after: [...e.task.after] } : {}),
      ...(state.drift ? { drift: state.drift } : {}),
    };
  }

  /**
   * Makes the tasks and events match a stored state (high availability): config tasks with their
   * stored enabled flag or deleted, API tasks added, replaced or removed. Returns the stored tasks
   * that could not be restored.
   */
  restore(tasks: Iterable<RestoredTask>, stored: ReadonlyMap<string, TaskEvent[]>, events: EventStore, keep?: ReadonlySet<string>): string[] {
    const problems: string[] = [];
    // Tasks in `keep` are this instance's own (shared mode): their live state is the truth.
    const records = new Map([...tasks].filter((t) => !keep?.has(t.name)).map((t) => [t.name, t]));
    for (const task of this.loaded.config.tasks) {
      if (keep?.has(task.name)) continue;
      const rec = records.get(task.name);
      if (rec?.spec && !rec.deleted) continue;
      if (rec?.deleted) {
        this.entries.delete(task.name);
        continue;
      }
      let e = this.entries.get(task.name);
      if (!e || e.origin !== "config") {
        e = configEntry(this.loaded, task);
        this.entries.set(task.name, e);
      }
      e.enabled = rec ? rec.enabled : task.enabled;
    }
    for (const rec of records.values()) {
      if (!rec.spec || rec.deleted) continue;
      const e = this.entries.get(rec.name);
      if (e?.origin === "api" && e.ref.kind === "module" && JSON.stringify(e.ref.spec) === JSON.stringify(rec.spec)) {
        e.enabled = rec.enabled;
        continue;
      }
      try {
        this.entries.set(rec.name, moduleEntry(rec.spec, rec.enabled));
      } catch (err) {
        problems.push(`task '${rec.name}' cannot be restored: ${messageOf(err)}`);
      }
    }
    for (const e of this.all()) {
      if (keep?.has(e.name)) continue;
      const rec = records.get(e.name);
      if (e.origin === "api" && (!rec?.spec || rec.deleted)) this.entries.delete(e.name);
    }
    for (const name of new Set([...this.entries.keys(), ...stored.keys(), ...events.names()])) {
      if (keep?.has(name)) continue;
      const list = stored.get(name);
      if (list && this.entries.has(name)) events.restore(name, list);
      else events.delete(name);
    }
    return problems;
  }
}
