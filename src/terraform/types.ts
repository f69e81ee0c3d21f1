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
  /** Resource counts from Terraform's JSON UI output. */
  summary: ChangeSummary;
  /** Human-readable plan/apply text (for inspect and the API's `plan` field). */
  output: string;
}

/** Options every driver operation takes. */
export interface RunOptions {
  /** Cancels the command: SIGINT first, SIGKILL after the grace period. */
  signal?: AbortSignal;
  /** Each line of Terraform's human output as it comes. */
  onOutput?: (line: string) => void;
  /** Kills the command after this many ms (default 30 min). */
  timeoutMs?: number;
}

/** What the driver needs to run one task. */
export interface TaskWorkspace {
  /** Task name: also the workspace name. */
  task: string;
  /** The synthesized Terraform JSON (written as main.tf.json). */
  json: string;
  /** Extra files to write next to it (name → content), e.g. terraform.tfvars.json. */
  files?: Record<string, string>;
  /** Extra environment for this task's commands (provider secrets, TF_VAR_…); never written to disk. */
  env?: Record<string, string>;
}

/**
 * Runs Terraform for tasks: one working dir per task, init only when the backend, providers or
 * modules changed, workspace select-or-create, apply/plan/destroy.
 */
export interface TerraformDriver {
  /** Writes the task's files, initializes when needed and applies. */
  apply(ws: TaskWorkspace, opts?: RunOptions): Promise<RunResult>;
  /** Writes the task's files, initializes when needed and plans (`-detailed-exitcode`). */
  plan(ws: TaskWorkspace, opts?: RunOptions): Promise<RunResult>;
  /** Destroys everything the task's state holds. */
  destroy(ws: TaskWorkspace, opts?: RunOptions): Promise<RunResult>;
}
