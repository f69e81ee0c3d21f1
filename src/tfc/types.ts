/** How a workspace executes runs. */
export type ExecutionMode = "remote" | "local" | "agent";

/** Run statuses of Terraform Cloud / Enterprise (a server may add others; unknown ones are kept as strings). */
export type RunStatus =
  | "pending"
  | "fetching"
  | "fetching_completed"
  | "pre_plan_running"
  | "pre_plan_completed"
  | "queuing"
  | "plan_queued"
  | "planning"
  | "planned"
  | "cost_estimating"
  | "cost_estimated"
  | "policy_checking"
  | "policy_override"
  | "policy_soft_failed"
  | "policy_checked"
  | "confirmed"
  | "post_plan_running"
  | "post_plan_completed"
  | "planned_and_finished"
  | "planned_and_saved"
  | "apply_queued"
  | "applying"
  | "applied"
  | "discarded"
  | "errored"
  | "canceled"
  | "force_canceled"
  | (string & {});

/** Statuses after which a run never changes again. */
export const FINAL_RUN_STATUSES: ReadonlySet<string> = new Set(["applied", "planned_and_finished", "planned_and_saved", "errored", "discarded", "canceled", "force_canceled"]);

/** An organization. */
export interface Organization {
  name: string;
  email: string | undefined;
}

/** An agent pool. */
export interface AgentPool {
  id: string;
  name: string;
}

/** A workspace as the driver needs it. Optional fields are ones some servers leave out. */
export interface Workspace {
  id: string;
  name: string;
  organization: string | undefined;
  description: string;
  executionMode: ExecutionMode | (string & {});
  autoApply: boolean;
  terraformVersion: string;
  tags: string[];
  locked: boolean;
  /** Who holds the lock, when the server says (some do not). */
  lockedBy: { type: string; id: string } | undefined;
  /** Connected to a VCS repository (cts refuses such workspaces). */
  vcsConnected: boolean;
  agentPoolId: string | undefined;
  resourceCount: number | undefined;
  currentConfigurationVersionId: string | undefined;
}

/** Settings of a workspace to create or update. */
export interface WorkspaceSettings {
  name?: string;
  description?: string;
  executionMode?: ExecutionMode;
  /** With executionMode "agent". */
  agentPoolId?: string;
  autoApply?: boolean;
  terraformVersion?: string;
  tags?: string[];
}

/** A workspace variable; a sensitive one reads back with an empty value. */
export interface Variable {
  id: string;
  key: string;
  value: string;
  description: string;
  category: "terraform" | "env";
  hcl: boolean;
  sensitive: boolean;
}

/** A variable to create or update. */
export interface VariableInput {
  key: string;
  value: string;
  category: "terraform" | "env";
  description?: string;
  hcl?: boolean;
  sensitive?: boolean;
}

/** A configuration version. */
export interface ConfigurationVersion {
  id: string;
  status: "pending" | "fetching" | "uploaded" | "archived" | "errored" | (string & {});
  uploadUrl: string | undefined;
  speculative: boolean;
  autoQueueRuns: boolean;
  source: string | undefined;
  errorMessage: string | undefined;
}

/** A run. */
export interface Run {
  id: string;
  status: RunStatus;
  statusTimestamps: Record<string, string>;
  message: string;
  isDestroy: boolean;
  autoApply: boolean;
  planOnly: boolean;
  /** Absent on servers that do not say; read the plan then. */
  hasChanges: boolean | undefined;
  actions: { isConfirmable: boolean; isDiscardable: boolean; isCancelable: boolean };
  workspaceId: string | undefined;
  configurationVersionId: string | undefined;
  planId: string | undefined;
  applyId: string | undefined;
  /** The run's cost estimate, when the organization estimates costs. */
  costEstimateId: string | undefined;
  /** Plan and apply when the server honoured `include=plan,apply` (some ignore it). */
  included: { plan?: Plan; apply?: Apply };
}

/** What to create a run with. */
export interface RunInput {
  workspaceId: string;
  configurationVersionId?: string;
  message?: string;
  isDestroy?: boolean;
  /** Unset: the workspace's setting. */
  autoApply?: boolean;
  planOnly?: boolean;
  /** Run-specific variables (HCL values) that win over workspace variables for this run only. */
  variables?: { key: string; value: string }[];
}

/** A plan; counts are absent (or always 0) on some servers. */
export interface Plan {
  id: string;
  status: string;
  hasChanges: boolean | undefined;
  additions: number | undefined;
  changes: number | undefined;
  destructions: number | undefined;
  logReadUrl: string | undefined;
}

/** An apply. */
export interface Apply {
  id: string;
  status: string;
  additions: number | undefined;
  changes: number | undefined;
  destructions: number | undefined;
  logReadUrl: string | undefined;
}

/** An output of a workspace's current state (a sensitive one has no value here). */
export interface StateOutput {
  name: string;
  sensitive: boolean;
  value: unknown;
}

/** Whether a plan changes anything, and how much. */
export interface PlanOutcome {
  changesPresent: boolean;
  summary: { add: number; change: number; destroy: number };
}

/** A policy check of a run (Sentinel or OPA): its status and the counts of its policies' results. */
export interface PolicyCheck {
  id: string;
  /** queued, passed, soft_failed, hard_failed, overridden, errored, unreachable, … */
  status: string;
  passed: number;
  totalFailed: number;
  hardFailed: number;
  softFailed: number;
  advisoryFailed: number;
}

/** A run's cost estimate: monthly costs as decimal strings (USD). */
export interface CostEstimate {
  id: string;
  /** pending, queued, finished, errored, canceled, skipped_due_to_targeting */
  status: string;
  priorMonthlyCost: string | undefined;
  proposedMonthlyCost: string | undefined;
  deltaMonthlyCost: string | undefined;
  resourcesCount: number | undefined;
  matchedResourcesCount: number | undefined;
}
