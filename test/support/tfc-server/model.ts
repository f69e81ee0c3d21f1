// The resources the test server keeps, in the API's words.

/** What a token may do in an organization: read, or read and change. */
export type Permission = "read" | "write";

/** A bearer token the server accepts, and the organizations it sees. */
export interface TokenGrant {
  token: string;
  userId: string;
  username: string;
  /** Organizations the token sees; anything else answers 404, as if it did not exist. */
  organizations: Record<string, Permission>;
  /** A Terraform Enterprise site admin: the admin API (`/api/v2/admin/…`) answers it; anyone else gets 404. */
  siteAdmin?: boolean;
}

/** A Terraform version the server offers (the admin API's `terraform-versions`). */
export interface TerraformVersion {
  id: string;
  version: string;
  enabled: boolean;
  beta: boolean;
  deprecated: boolean;
  official: boolean;
}

/** An organization (its name is its id, as in TFC). */
export interface Organization {
  name: string;
  email: string;
  createdAt: string;
}

/** An agent pool of an organization. */
export interface AgentPool {
  id: string;
  name: string;
  organization: string;
}

/** One state version of a workspace: the raw state file a run left behind. */
export interface StateVersion {
  id: string;
  serial: number;
  lineage: string;
  state: string;
  runId: string | undefined;
  createdAt: string;
}

/** A workspace with the settings a driver reads and writes. */
export interface Workspace {
  id: string;
  organization: string;
  name: string;
  description: string;
  executionMode: "remote" | "local" | "agent";
  autoApply: boolean;
  terraformVersion: string;
  tags: string[];
  agentPoolId: string | undefined;
  /** Set when the workspace is connected to a VCS repository (the driver must refuse it). */
  vcsRepo: { identifier: string } | undefined;
  /** Who holds the lock: a user (lock action) or a run (while it plans, waits and applies). */
  lockedBy: { type: "users" | "runs"; id: string } | undefined;
  lockReason: string;
  stateVersions: StateVersion[];
  currentConfigurationVersionId: string | undefined;
  createdAt: string;
  updatedAt: string;
}

/** A workspace variable (terraform or env). */
export interface Variable {
  id: string;
  workspaceId: string;
  key: string;
  value: string;
  description: string;
  category: "terraform" | "env";
  hcl: boolean;
  sensitive: boolean;
}

/** A configuration version: a tar.gz uploaded through its upload URL. */
export interface ConfigurationVersion {
  id: string;
  workspaceId: string;
  status: "pending" | "uploaded" | "errored";
  autoQueueRuns: boolean;
  speculative: boolean;
  source: string;
  uploadSecret: string;
  tarball: Buffer | undefined;
  errorMessage: string | undefined;
  /** Reads that still answer `pending` after the upload (TFC processes uploads asynchronously). */
  pendingReadsLeft: number;
  createdAt: string;
}

/** Every run status this server produces (TFC's names). */
export type RunStatus =
  | "pending"
  | "plan_queued"
  | "planning"
  | "planned"
  | "cost_estimating"
  | "cost_estimated"
  | "policy_checking"
  | "policy_checked"
  | "policy_soft_failed"
  | "confirmed"
  | "apply_queued"
  | "applying"
  | "applied"
  | "planned_and_finished"
  | "discarded"
  | "errored"
  | "canceled"
  | "force_canceled";

/** Plan and apply phase status (TFC's names). */
export type PhaseStatus = "pending" | "queued" | "running" | "finished" | "errored" | "canceled" | "unreachable";

/** The plan or the apply of a run. */
export interface Phase {
  id: string;
  runId: string;
  status: PhaseStatus;
  hasChanges: boolean;
  additions: number;
  changes: number;
  destructions: number;
  logSecret: string;
  /** The plan's `tofu show -json` output, once planned (archivist secret of the blob). */
  jsonSecret: string | undefined;
  statusTimestamps: Record<string, string>;
}

/** A run and what it needs to execute. */
export interface Run {
  id: string;
  workspaceId: string;
  configurationVersionId: string;
  status: RunStatus;
  statusTimestamps: Record<string, string>;
  message: string;
  isDestroy: boolean;
  autoApply: boolean;
  planOnly: boolean;
  /** Run-specific variables (HCL values), which win over workspace variables. */
  variables: { key: string; value: string }[];
  hasChanges: boolean;
  source: string;
  createdBy: string;
  createdAt: string;
  plan: Phase;
  apply: Phase;
  /** The saved plan file, so the apply executes exactly what was planned. */
  planFile: Buffer | undefined;
  /** Stops the run's tofu processes (cancel, discard, server stop). */
  abort: AbortController;
  /** Its policy check, once the run passed through `policy_checking` (variants policyChecks, policySoftFails). */
  policyCheck?: PolicyCheck;
  /** Its cost estimate, once the run passed through `cost_estimating` (variant costEstimation). */
  costEstimate?: CostEstimate;
}

/** A run's policy check: one policy set, counted as TFC's `result` does. */
export interface PolicyCheck {
  id: string;
  runId: string;
  status: "passed" | "soft_failed" | "hard_failed" | "overridden";
  passed: number;
  softFailed: number;
  hardFailed: number;
}

/** A run's cost estimate: monthly costs as decimal strings, as TFC sends them. */
export interface CostEstimate {
  id: string;
  runId: string;
  status: "finished";
  resourcesCount: number;
  matchedResourcesCount: number;
  priorMonthlyCost: string;
  proposedMonthlyCost: string;
  deltaMonthlyCost: string;
}

/** A blob behind an archivist URL (logs, plan JSON, upload targets). */
export interface Blob {
  contentType: string;
  content: string;
}
