import type { CtsError } from "../errors/cts-error.ts";
import type { Logger } from "../log/logger.ts";
import type { Metrics } from "../metrics/metrics.ts";
import type { ConsulClient } from "../consul/client.ts";
import type { Driver, RunResult } from "../driver/types.ts";
import type { SynthResult } from "../synth/synthesize.ts";
import type { ModuleTaskSpec } from "../synth/task-ref.ts";
import type { EventStore, RunActivity, TaskEvent, TaskStatus } from "./events.ts";
import type { DriftResult, DriftSettings } from "./drift.ts";
import type { HeldPlan } from "./holds.ts";
import type { StateNotSavedReport } from "./unsaved-state.ts";
import type { StoredState } from "../state/stored-state.ts";
import type { GuardSettings } from "../task/guards.ts";

// The shapes the API, high availability and the CLI see of the runtime. They depend on nothing
// inside it, so those callers never reach past these into how a run is made.

/** What a run did. */
export interface RunOutcome {
  task: string;
  ok: boolean;
  /** applied | no-op | planned | destroyed | failed | cancelled | disabled | deleted; drift checks: drift | in-sync | inputs-changed | not-applied */
  outcome: string;
  result?: RunResult;
  /** A drift check's finding. */
  drift?: DriftResult;
  synth?: SynthResult;
  error?: CtsError;
  /** A plan held for approval (outcome "held"). */
  hold?: HeldPlan;
  /** The Terraform state the task had applied to was gone or replaced (so the run was not skipped): why. */
  stateLost?: string;
  /** An earlier apply of the task could not save its state (or lost its lock): what this apply found outside the saved state. */
  stateNotSaved?: StateNotSavedReport;
}

/** A task as the API and CLI see it. */
export interface TaskView {
  name: string;
  description: string;
  enabled: boolean;
  origin: "config" | "api";
  status: TaskStatus;
  /** While Consul is unreachable (status is then "unknown"): since when, the status before, why. */
  stale?: { since: string; lastStatus: TaskStatus; reason: string };
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
  /** Task chains: the tasks this one runs after (config or API task), only when it lists any. */
  after?: string[];
  /** Drift detection: the effective settings and the last check (none yet: undefined). */
  drift?: DriftSettings & { last?: DriftResult };
  /** A plan held for approval (plan guards, `approval: "always"`), if any. */
  held?: HeldPlan;
  /** The task's plan guards and approval mode, when it has any. */
  guards?: { guards?: GuardSettings; approval: "always" | "guards" };
}

export type { TaskChange } from "../state/records.ts";

/** A failed attempt that will be tried again (logged by the runtime; HA explains lock waits). */
export interface RetryNotice {
  task: string;
  /** The failure's CtsError code (TERRAFORM_STATE_LOCKED, TERRAFORM_HUNG, TERRAFORM_FAILED…). */
  code: string;
  /** 1 for the first retry. */
  attempt: number;
  delayMs: number;
  message: string;
}

export type { AppliedRecord, OutputsRecord, RunRecord } from "../state/records.ts";
import type { OutputsRecord, RunRecord } from "../state/records.ts";

/** One task of a stored state (high availability): an enabled override, a tombstone, or an API task. */
export interface RestoredTask {
  name: string;
  enabled: boolean;
  /** The spec of a task created through the API. */
  spec?: ModuleTaskSpec;
  /** A config task that was deleted through the API. */
  deleted?: boolean;
}

/** What the API (and `cts task …` through it) may do with tasks. */
export interface TaskControl {
  taskNames(): string[];
  view(name: string): TaskView | undefined;
  readonly events: EventStore;
  /** Queues a run now (skips the buffer); resolves with the outcome of a run that started after the call. */
  /** `force`: applies even when the inputs equal what was applied last. */
  runNow(name: string, opts?: { force?: boolean }): Promise<RunOutcome>;
  setEnabled(name: string, enabled: boolean, opts?: { run?: boolean }): Promise<void>;
  planTask(name: string): Promise<RunOutcome>;
  /** Queues a drift check (takes the task's queue slot like a run); resolves with its outcome. */
  checkDrift(name: string): Promise<RunOutcome>;
  /** Calls `listener` when a run or drift check starts or ends; returns the unsubscribe function. */
  onActivity(listener: (a: RunActivity) => void): () => void;
  /** Adds a module task; throws TASK_EXISTS or TASK_INVALID. */
  addModuleTask(spec: ModuleTaskSpec): void;
  /** Replaces an API task's spec once it is not running; queues no run. */
  replaceModuleTask(name: string, spec: ModuleTaskSpec): Promise<void>;
  /** Plans a module task that is not kept; its working dir is removed afterwards. */
  dryRunModuleTask(spec: ModuleTaskSpec): Promise<RunOutcome>;
  deleteTask(name: string, opts?: { destroy?: boolean }): Promise<RunOutcome | undefined>;
  /**
   * Approves the task's held plan and runs the task: applies exactly that plan (or, when the inputs
   * changed meanwhile, checks the new plan). Throws TASK_NOT_FOUND, or PLAN_NOT_HELD when nothing is held.
   */
  approve(name: string): Promise<RunOutcome>;
  /** Discards the task's held plan (not applied; the same inputs are not planned again). Throws TASK_NOT_FOUND or PLAN_NOT_HELD. */
  reject(name: string): Promise<HeldPlan>;
  /** The task's latest Terraform outputs (sensitive values redacted); undefined before its first apply. */
  taskOutputs?(name: string): OutputsRecord | undefined;
  /** The task's run history, newest first. */
  taskRuns?(name: string): RunRecord[];
}

/** What high availability does with the runtime: pause while following, restore, resume when leading. */
export interface HaControl {
  readonly isPaused: boolean;
  pause(graceMs?: number): Promise<void>;
  /** The lock runs ran under is lost: cancels every run at once, its Terraform gone within `killWithinMs` (0: SIGKILL now). Returns how many. */
  fence(killWithinMs: number): number;
  /** Runs every task once and watches; a task whose inputs equal its `applied` record (the stored state's) is skipped as a no-op. */
  resume(): Promise<void>;
  /** Takes a stored state: tasks, events and held plans; with `applied` (a new leader), what was applied too. */
  restore(stored: StoredState, opts?: { applied?: boolean }): string[];
  /** Calls `listener` before each retry of a failed run; returns the unsubscribe function. */
  onRetry(listener: (notice: RetryNotice) => void): () => void;
  /** Shared cluster mode: only owned tasks watch and run (call before resume). */
  shareTasks(): void;
  /** Task chains: the name of the chain a task runs in (shared mode gives a chain's tasks one owner); the task's own name outside a chain. */
  chainOf?(name: string): string;
  /** Shared mode: this instance holds the task's lock now; runs it once and watches it. */
  own(name: string): void;
  /** Shared mode: the task moved away; stops it and waits until it is not running. */
  disown(name: string, graceMs?: number): Promise<void>;
  /** Whether this instance may run the task now. */
  mine(name: string): boolean;
  /** The tasks this instance owns (every task outside shared mode). */
  ownedNames(): string[];
  taskNames(): string[];
  view(name: string): TaskView | undefined;
  readonly events: EventStore;
}

/** The CLI's run modes, and the idle/run-count signals tests and benchmarks wait on. */
export interface RunModes {
  watch(): Promise<void>;
  once(): Promise<RunOutcome[]>;
  inspect(names?: string[]): Promise<RunOutcome[]>;
  /** Resolves when no run is queued or running. */
  idle(): Promise<void>;
  /** Resolves when no run is queued or running and no buffer period is waiting to fire. */
  whenIdle(): Promise<void>;
  /** Runs finished so far (of one task, or of all), counting no-ops, failures and cancellations. */
  runCount(task?: string): number;
  /** Data changes that reached a task's triggers so far (identical data never counts). */
  changeCount(task: string): number;
  stop(graceMs?: number): Promise<void>;
}

/** Everything a running cts holds, for the CLI, the API and high availability. */
export interface Runtime {
  controller: TaskControl & HaControl & RunModes;
  /** The process's one Consul client (high availability, shared mode and the API's registration use it too). */
  consul: ConsulClient;
  driver: Driver;
  log: Logger;
  /** What the runtime measures; `GET /metrics` scrapes it. */
  metrics: Metrics;
  /** This instance's id. */
  id: string;
  /** `graceMs`: how long runs in flight may take to end after they are cancelled (default 10 s). */
  close(opts?: { graceMs?: number }): Promise<void>;
}
