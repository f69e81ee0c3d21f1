import { CtsError } from "../errors/cts-error.ts";
import { retainRuns, type AppliedRecord, type DriftResult, type HoldRecord, type OutputsRecord, type RunRecord, type RunRetention, type StoredTask, type TaskChange, type TaskEvent } from "./records.ts";
import { stateKeys, type StoredState } from "./stored-state.ts";
import type { TaskState } from "./task-state.ts";

/** Fenced writes to Consul KV, queued and retried (the cluster's `StateWriter`, src/ha/writer.ts). */
export interface KvWrites {
  /** Queues a write (null deletes the key), fenced with `fence` (default: the writer's own lock). */
  set(key: string, value: string | null, fence?: string): void;
  /** Waits until the queued writes reached Consul; false on timeout or when it may not write. */
  flush(timeoutMs?: number): Promise<boolean>;
}

/** Who may write what: the cluster member's answer (leader election or shared assignment). */
export interface KvAccess {
  /**
   * The lock a write about `task` is fenced with: undefined for the writer's own lock, null when
   * this instance must not write it now (a follower; a task another member owns). `what`: "task"
   * for a task record changed through this instance's API, "run" for what a run keeps.
   */
  fence(task: string, what: "task" | "run"): string | undefined | null;
  /** A task was created or deleted: the cluster may have to reassign tasks. */
  tasksChanged?(): void;
}

/**
 * The task state of a cluster (high availability, shared mode): kept in Consul KV under the state
 * prefix, so a new leader or owner starts from it, with a copy in memory that reads answer from.
 * A void before an apply waits until Consul has it: a key left in KV during an apply that is then
 * cut short would make the next leader skip inputs that were only half applied.
 */
export class KvTaskState implements TaskState {
  private readonly appliedOf = new Map<string, AppliedRecord>();
  private readonly holds = new Map<string, HoldRecord>();
  /** Drift findings live in memory (a new leader checks again). */
  private readonly drifts = new Map<string, DriftResult>();
  private readonly outputsOf = new Map<string, OutputsRecord>();
  /** Each task's runs, newest first: one KV key per run. */
  private readonly runsOf = new Map<string, RunRecord[]>();
  /** Tasks whose applied record is in KV (or queued to be): only those need a stored void before a run. */
  private readonly stored = new Set<string>();

  constructor(
    private readonly writes: KvWrites,
    private readonly prefix: string,
    private readonly access: KvAccess,
  ) {}

  applied(task: string): AppliedRecord | undefined {
    return this.appliedOf.get(task);
  }

  async voidApplied(task: string, count?: number): Promise<void> {
    const record = count !== undefined && count > 0 ? { count } : undefined;
    if (record) this.appliedOf.set(task, record);
    else this.appliedOf.delete(task);
    if (!record && !this.stored.has(task)) return;
    const fence = this.access.fence(task, "run");
    if (fence === null) throw new CtsError("HA_STATE_NOT_STORED", "external", "is not run: this instance stopped leading before it could clear the task's applied inputs in Consul.", { task });
    this.writes.set(stateKeys.applied(this.prefix, task), record ? JSON.stringify({ ...record, updated_at: new Date().toISOString() }) : null, fence);
    if (!(await this.writes.flush(5_000)))
      throw new CtsError("HA_STATE_NOT_STORED", "external", "is not run: clearing its applied inputs in Consul (before Terraform may change anything) did not succeed within 5 s; the run is tried again.", { task });
    if (record) this.stored.add(task);
    else this.stored.delete(task);
  }

  recordApplied(task: string, record: AppliedRecord): void {
    this.appliedOf.set(task, { ...record });
    const fence = this.access.fence(task, "run");
    if (fence === null || record.key === undefined) return;
    this.stored.add(task);
    this.writes.set(stateKeys.applied(this.prefix, task), JSON.stringify({ ...record, updated_at: new Date().toISOString() }), fence);
  }

  forgetAppliedKey(task: string): void {
    const count = this.appliedOf.get(task)?.count;
    if (count !== undefined) this.appliedOf.set(task, { count });
    else this.appliedOf.delete(task);
  }

  hold(task: string): HoldRecord {
    return this.holds.get(task) ?? {};
  }

  setHold(task: string, record: HoldRecord | undefined): void {
    const had = this.holds.has(task);
    if (record?.held || record?.rejected) this.holds.set(task, record);
    else this.holds.delete(task);
    if (!had && !this.holds.has(task)) return;
    const fence = this.access.fence(task, "run");
    if (fence === null) return;
    // The summary and reasons only: the plan file stays with the instance that made it.
    this.writes.set(stateKeys.hold(this.prefix, task), this.holds.has(task) ? JSON.stringify(record) : null, fence);
  }

  drift(task: string): DriftResult | undefined {
    return this.drifts.get(task);
  }

  recordDrift(task: string, result: DriftResult | undefined): void {
    if (result) this.drifts.set(task, result);
    else this.drifts.delete(task);
  }

  outputs(task: string): OutputsRecord | undefined {
    return this.outputsOf.get(task);
  }

  recordOutputs(task: string, record: OutputsRecord): void {
    this.outputsOf.set(task, record);
    const fence = this.access.fence(task, "run");
    if (fence === null) return;
    this.writes.set(stateKeys.outputs(this.prefix, task), JSON.stringify(record), fence);
  }

  runs(task: string): RunRecord[] {
    return [...(this.runsOf.get(task) ?? [])];
  }

  recordRun(task: string, run: RunRecord, retention: RunRetention): void {
    const { kept, dropped } = retainRuns([run, ...(this.runsOf.get(task) ?? [])], retention, Date.parse(run.end_time));
    this.runsOf.set(task, kept);
    const fence = this.access.fence(task, "run");
    if (fence === null) return;
    if (kept[0]?.id === run.id) this.writes.set(stateKeys.run(this.prefix, task, run.id), JSON.stringify(run), fence);
    for (const id of dropped) if (id !== run.id) this.writes.set(stateKeys.run(this.prefix, task, id), null, fence);
  }

  recordEvents(task: string, events: TaskEvent[]): void {
    const fence = this.access.fence(task, "run");
    if (fence === null) return;
    this.writes.set(stateKeys.events(this.prefix, task), JSON.stringify(events), fence);
  }

  recordTask(change: TaskChange, record: StoredTask | undefined): void {
    const fence = this.access.fence(change.task, "task");
    if (fence === null) return;
    const p = this.prefix;
    if (change.kind === "deleted") {
      const tombstone: StoredTask = { name: change.task, origin: "config", enabled: false, deleted: true, updated_at: new Date().toISOString() };
      this.writes.set(stateKeys.task(p, change.task), change.origin === "config" ? JSON.stringify(tombstone) : null, fence);
      this.writes.set(stateKeys.events(p, change.task), null, fence);
      this.writes.set(stateKeys.hold(p, change.task), null, fence);
      this.writes.set(stateKeys.applied(p, change.task), null, fence);
      this.writes.set(stateKeys.outputs(p, change.task), null, fence);
      for (const run of this.runsOf.get(change.task) ?? []) this.writes.set(stateKeys.run(p, change.task, run.id), null, fence);
      this.stored.delete(change.task);
      this.access.tasksChanged?.();
      return;
    }
    if (!record) return;
    this.writes.set(stateKeys.task(p, change.task), JSON.stringify({ ...record, updated_at: new Date().toISOString() }), fence);
    if (change.kind === "created") this.access.tasksChanged?.();
  }

  forget(task: string): void {
    this.appliedOf.delete(task);
    this.holds.delete(task);
    this.drifts.delete(task);
    this.outputsOf.delete(task);
    this.runsOf.delete(task);
  }

  /**
   * Takes a stored state, writing nothing: held plans of the tasks not in `except` and, with
   * `applied` (a new leader), what the previous leader applied, replacing what this instance knew
   * (another instance may have applied since).
   */
  restore(state: StoredState, opts: { except?: ReadonlySet<string>; applied?: boolean } = {}): void {
    const names = new Set([...this.holds.keys(), ...state.holds.keys()]);
    for (const task of names) {
      if (opts.except?.has(task)) continue;
      const record = state.holds.get(task);
      if (record?.held || record?.rejected) this.holds.set(task, record);
      else this.holds.delete(task);
    }
    // Outputs and runs: what the instance that ran the task kept (a follower shows them, a new leader goes on from them).
    const outputs = state.outputs ?? new Map<string, OutputsRecord>();
    const runs = state.runs ?? new Map<string, RunRecord[]>();
    for (const task of new Set([...this.outputsOf.keys(), ...outputs.keys()])) {
      if (opts.except?.has(task)) continue;
      const record = outputs.get(task);
      if (record) this.outputsOf.set(task, record);
      else this.outputsOf.delete(task);
    }
    for (const task of new Set([...this.runsOf.keys(), ...runs.keys()])) {
      if (opts.except?.has(task)) continue;
      const list = runs.get(task);
      if (list?.length) this.runsOf.set(task, list);
      else this.runsOf.delete(task);
    }
    if (!opts.applied) return;
    this.appliedOf.clear();
    this.stored.clear();
    for (const [task, record] of state.applied) {
      this.appliedOf.set(task, record);
      this.stored.add(task);
    }
  }
}
