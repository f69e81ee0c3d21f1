import type { AppliedRecord, DriftResult, HoldRecord, OutputsRecord, RunRecord, RunRetention, StoredTask, TaskChange, TaskEvent } from "./records.ts";
import type { StoredState } from "./stored-state.ts";

/**
 * Everything about a task that outlives a run, in one place: what it applied last (the no-op skip's
 * key and the empty-data check's count), its held plan or rejected inputs, its events and its task
 * record (an API task's spec, an enabled flag changed through the API, a tombstone). Reads answer
 * from memory; writes go where the next process reads them (a folder per task, or Consul KV).
 *
 * Two implementations, chosen by the composition root (src/daemon/compose.ts):
 * - `FileTaskState` (file-state.ts): one folder per task under `<working dir>/.cts-state/`.
 * - `KvTaskState` (kv-state.ts): Consul KV under the cluster's state prefix, for high availability
 *   and shared mode, every write fenced with the lock that lets this instance write it.
 */
export interface TaskState {
  /** What the task applied last: undefined when never, or when a takeover forgot it. */
  applied(task: string): AppliedRecord | undefined;
  /**
   * Before Terraform may change anything: forgets the key, keeping the count about to be applied
   * (an apply cut short may already have put those instances in place). Resolves once that is
   * kept where a restart (or a new leader) reads it; rejects when it cannot be (the run must not go on).
   */
  voidApplied(task: string, count?: number): Promise<void>;
  /** After a successful apply: the key and count it applied. */
  recordApplied(task: string, record: AppliedRecord): void;
  /**
   * Forgets the applied key (keeping the count): another instance may have applied since (a shared
   * mode takeover), so the next run applies even with the same inputs.
   */
  forgetAppliedKey(task: string): void;
  /** The task's held plan or rejected inputs ({} when neither). */
  hold(task: string): HoldRecord;
  /** Keeps a hold record (undefined clears it). */
  setHold(task: string, record: HoldRecord | undefined): void;
  /** The last drift check's finding (undefined: none, or an apply since made it moot). Kept in memory. */
  drift(task: string): DriftResult | undefined;
  /** Keeps a drift check's finding (undefined clears it). */
  recordDrift(task: string, result: DriftResult | undefined): void;
  /**
   * The task's latest Terraform outputs (sensitive values redacted) and the run that read them;
   * undefined before its first apply. What task chains read (`input.outputs.<task>`).
   */
  outputs(task: string): OutputsRecord | undefined;
  /** After an apply or destroy: keeps the outputs it left (kept across restarts and failover). */
  recordOutputs(task: string, record: OutputsRecord): void;
  /** The task's run history, newest first (what the retention kept). */
  runs(task: string): RunRecord[];
  /** A run ended: keeps it, dropping the runs `retention` no longer keeps. */
  recordRun(task: string, run: RunRecord, retention: RunRetention): void;
  /** The task's events changed: keeps the list (newest first). */
  recordEvents(task: string, events: TaskEvent[]): void;
  /** A task was created, replaced, enabled, disabled or deleted at run time: keeps its record (`record`, or a tombstone). */
  recordTask(change: TaskChange, record: StoredTask | undefined): void;
  /** Forgets everything kept of a deleted task (except its tombstone). */
  forget(task: string): void;
  /** Takes a stored state read from elsewhere (a follower's mirror, a new leader's read), writing nothing; `except`: tasks to leave alone. */
  restore?(state: StoredState, opts?: { except?: ReadonlySet<string>; applied?: boolean }): void;
}
