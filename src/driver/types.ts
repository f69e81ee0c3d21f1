// The contract between the daemon and whatever runs Terraform for it. The local driver
// (src/terraform/: tofu/terraform in a working dir on this machine) implements it, and so will a
// Terraform Cloud driver (workspaces, uploaded configuration versions, remote runs). The run
// pipeline, events, high availability and the no-op skip see only these types, so they cannot
// tell the two apart. Nothing here imports anything: every layer may import it.

/** Counts of what a plan or apply changes. */
export interface ChangeSummary {
  add: number;
  change: number;
  destroy: number;
}

/** Result of an apply or plan. */
export interface RunResult {
  /** True when Terraform had (or, for plan, would make) changes. */
  changesPresent: boolean;
  /** Resource counts of the plan or apply (the local driver reads them from Terraform's JSON UI output). */
  summary: ChangeSummary;
  /** The resources changed (apply, destroy) or to change (plan), by address; at most 100. */
  resources?: ResourceChange[];
  /** Human-readable plan/apply text (for inspect and the API's `plan` field). */
  output: string;
  /** True when this run had to run `init` first (first run, or backend/providers/modules changed); drivers that never init leave it out. */
  initialized?: boolean;
  /** Where the run can be seen (the Terraform Cloud driver: the run's page); drivers without one leave it out. */
  url?: string;
  /**
   * After a successful apply: the root module's outputs as the state now holds them, sensitive ones
   * already redacted (`redactOutputs`, outputs.ts). Absent when the driver could not tell (a plan, a
   * failed read of the outputs): the outputs kept from before stay.
   */
  outputs?: TaskOutputs;
  /**
   * What the remote service's own checks of the run said (the Terraform Cloud driver: its policy
   * checks and cost estimate); drivers without such checks, and runs that had none, leave it out.
   */
  checks?: RunChecks;
}

/**
 * Terraform Cloud's own checks of a run, summarized for the run's event (names as the API spells
 * them, in the event's snake_case). Each part is there only when the run had it.
 */
export interface RunChecks {
  /** The run's policy checks (Sentinel/OPA), added up: the worst status and the counts of policies. */
  policies?: { status: string; passed: number; failed: number; hard_failed: number; soft_failed: number; advisory_failed: number };
  /** The run's cost estimate: monthly costs as the server gives them (decimal strings, USD), and how many resources it could price. */
  cost_estimate?: { status: string; prior_monthly_cost?: string; proposed_monthly_cost?: string; delta_monthly_cost?: string; resources?: number; matched_resources?: number };
}

/** One Terraform output of a task: a sensitive one never carries its value (it reads "(sensitive)"). */
export interface TaskOutput {
  value: unknown;
  /** Terraform's type of the value (`"string"`, `["list","string"]`, …), when the driver knows it. */
  type?: unknown;
  sensitive: boolean;
  /** The value was too large to keep (over 64 KiB as JSON) and reads "(too large)". */
  truncated?: true;
}

/** A task's outputs by name. */
export type TaskOutputs = Record<string, TaskOutput>;

/** One resource a plan or apply changes: its address and Terraform's action (create, update, delete, replace, read, move, …). */
export interface ResourceChange {
  address: string;
  action: string;
}

import type { StateObject } from "./state-objects.ts";

/**
 * The reason a run's signal is aborted with when its instance lost the lock it ran under (a
 * high-availability leader or a task owner whose session is gone or about to be given away): the
 * command must be gone by `killBy` (`performance.now()` time), when another instance may hold the
 * lock. The local driver then shortens its grace period to that, and kills at once (SIGKILL, no
 * graceful stop that would save state) when it is already past: after a pause (SIGSTOP, a VM or
 * host stall) the lock may be someone else's.
 */
export interface FencedCancel {
  fenced: true;
  killBy: number;
}

/** The `FencedCancel` an abort reason is, if it is one. */
export function fencedCancel(reason: unknown): FencedCancel | undefined {
  const r = reason as Partial<FencedCancel> | undefined;
  return r && typeof r === "object" && r.fenced === true && typeof r.killBy === "number" ? (r as FencedCancel) : undefined;
}

/** Options every driver operation takes. */
export interface RunOptions {
  /** Cancels the operation (the local driver: SIGINT first, SIGKILL after the grace period, or by a `FencedCancel`'s deadline). */
  signal?: AbortSignal;
  /** Each line of Terraform's human output as it comes. */
  onOutput?: (line: string) => void;
  /** Stops the operation after this many ms (default: the driver's, 30 min for the local one). */
  timeoutMs?: number;
}

/** What the driver needs to run one task. */
export interface TaskWorkspace {
  /** Task name (the local driver's workspace name too). */
  task: string;
  /** The synthesized Terraform JSON (main.tf.json). */
  json: string;
  /** Extra files to write next to it (name → content), e.g. terraform.tfvars.json. */
  files?: Record<string, string>;
  /** Extra environment for this task's commands (provider secrets, TF_VAR_…); never written to disk. */
  env?: Record<string, string>;
  /** The task's description (the Terraform Cloud driver gives it to a workspace it creates). */
  description?: string;
  /** The task's workspace settings under the Terraform Cloud driver (ignored by the local one). */
  terraformCloudWorkspace?: { executionMode?: "remote" | "agent"; agentPoolId?: string; agentPoolName?: string; terraformVersion?: string };
}

/**
 * A plan the driver keeps so that exactly it can be applied later (plan guards and approvals):
 * the outcome of the plan, Terraform's JSON plan representation, and the driver's handle on it.
 */
export interface SavedPlan extends RunResult {
  /**
   * Terraform's JSON plan representation (`terraform show -json <plan>`: `resource_changes`,
   * `output_changes`, …). It may hold sensitive values: read it, never log or store it.
   */
  plan: Record<string, unknown>;
  /**
   * The driver's handle on the plan, for `applyPlan` / `discardPlan`: the local driver's plan file
   * in the task's folder, a Terraform Cloud run id. Plain text, safe to store.
   */
  ref: string;
}

/**
 * The optional operations of a driver that can keep a plan and apply exactly it later (plan guards
 * and approvals need them; a task with guards on a driver without them fails with PLAN_UNSUPPORTED).
 * The local driver keeps one plan file per task; a Terraform Cloud driver maps them onto a run that
 * waits for confirmation (plan-only: no auto-apply), its JSON plan (`/plans/:id/json-output`), and
 * the run's apply or discard actions.
 */
export interface SavedPlans {
  /**
   * Writes the task's files, initializes when needed, plans, and keeps the plan (replacing any plan
   * the task kept before). `changesPresent: false` keeps nothing (the ref is then empty).
   */
  planToApply(ws: TaskWorkspace, opts?: RunOptions): Promise<SavedPlan>;
  /**
   * Applies exactly the kept plan `ref`, then lets go of it. Throws PLAN_NOT_FOUND when the driver
   * no longer has it (another instance made it, or it was discarded) and PLAN_STALE when the state
   * changed since it was made: the caller plans again.
   */
  applyPlan(ws: TaskWorkspace, ref: string, opts?: RunOptions): Promise<RunResult>;
  /** Lets go of a kept plan (rejected or superseded); a plan already gone is fine. */
  discardPlan(task: string, ref: string): Promise<void>;
}

/**
 * The three operations of every driver: apply, plan only, destroy, each answering with the
 * outcome and whether anything changed. Failures are CtsErrors with the driver's codes
 * (TERRAFORM_FAILED, TERRAFORM_STATE_LOCKED, TERRAFORM_HUNG, TERRAFORM_TIMEOUT, TERRAFORM_CANCELLED…),
 * which is all the runtime's retry policy looks at.
 */
export interface TerraformDriver {
  /** Writes the task's files, initializes when needed and applies. */
  apply(ws: TaskWorkspace, opts?: RunOptions): Promise<RunResult>;
  /** Writes the task's files, initializes when needed and plans (`-detailed-exitcode`). */
  plan(ws: TaskWorkspace, opts?: RunOptions): Promise<RunResult>;
  /** Destroys everything the task's state holds. */
  destroy(ws: TaskWorkspace, opts?: RunOptions): Promise<RunResult>;
}

/** A driver as the daemon holds it: the operations, the task's local folder, and its lifetime. */
export interface Driver extends TerraformDriver, Partial<SavedPlans> {
  /**
   * The task's folder on this machine, where the driver works (what outlives a run is the task
   * state's, src/state/, in a folder of its own). Throws TASK_NAME_INVALID for bad names.
   */
  taskDir(task: string): string;
  /** Keeps what the driver keeps warm between runs (provider processes) through quiet spells, or lets it time out again; drivers that keep nothing leave it out. */
  keepWarm?(on: boolean): void;
  /** Lets go of what the driver keeps warm for one task (deleted) or for all (leadership lost); drivers that keep nothing leave it out. */
  coolDown?(task?: string): Promise<void>;
  /**
   * The objects the task's saved state holds (address and id), read with Terraform (`show -json`);
   * after an apply that could not save its state, what it had made is compared with them. Drivers
   * that cannot read a state leave it out.
   */
  stateObjects?(ws: TaskWorkspace, opts?: RunOptions): Promise<StateObject[]>;
  /** The Terraform version the driver runs ("1.12.6"), asked once and remembered. */
  version(): Promise<string>;
  /** Ends what the driver keeps running between runs (warm provider processes); later runs do without. */
  close(): Promise<void>;
}
