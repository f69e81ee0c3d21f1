import { newId, newSecret } from "./ids.ts";

/** What a token may do in an organization: read, or read and change. */
export type Permission = "read" | "write";

/** A bearer token the server accepts, and the organizations it sees. */
export interface TokenGrant {
  token: string;
  userId: string;
  username: string;
  /** Organizations the token sees; anything else answers 404, as if it did not exist. */
  organizations: Record<string, Permission>;
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
}

/** A blob behind an archivist URL (logs, plan JSON, upload targets). */
export interface Blob {
  contentType: string;
  content: string;
}

function now(): string {
  return new Date().toISOString();
}

/** The server's in-memory data. Tests may seed or inspect it directly (e.g. a VCS-connected workspace). */
export class Store {
  readonly organizations = new Map<string, Organization>();
  readonly tokens = new Map<string, TokenGrant>();
  readonly agentPools = new Map<string, AgentPool>();
  readonly workspaces = new Map<string, Workspace>();
  readonly variables = new Map<string, Variable>();
  readonly configurationVersions = new Map<string, ConfigurationVersion>();
  readonly runs = new Map<string, Run>();
  readonly phases = new Map<string, Phase>();
  readonly blobs = new Map<string, Blob>();

  /** Adds an organization. */
  addOrganization(name: string): Organization {
    const org = { name, email: `admin@${name}.example`, createdAt: now() };
    this.organizations.set(name, org);
    return org;
  }

  /** Adds a token seeing the given organizations. */
  addToken(token: string, organizations: Record<string, Permission>, username = "cts-test"): TokenGrant {
    const grant = { token, userId: newId("user"), username, organizations };
    this.tokens.set(token, grant);
    return grant;
  }

  /** Adds an agent pool. */
  addAgentPool(organization: string, name: string): AgentPool {
    const pool = { id: newId("apool"), name, organization };
    this.agentPools.set(pool.id, pool);
    return pool;
  }

  /** Adds a workspace with TFC's defaults for everything not given. */
  addWorkspace(organization: string, name: string, settings: Partial<Omit<Workspace, "id" | "organization" | "name">> = {}): Workspace {
    const ws: Workspace = {
      id: newId("ws"),
      organization,
      name,
      description: "",
      executionMode: "remote",
      autoApply: false,
      terraformVersion: "1.9.0",
      tags: [],
      agentPoolId: undefined,
      vcsRepo: undefined,
      lockedBy: undefined,
      lockReason: "",
      stateVersions: [],
      currentConfigurationVersionId: undefined,
      createdAt: now(),
      updatedAt: now(),
      ...settings,
    };
    this.workspaces.set(ws.id, ws);
    return ws;
  }

  /** The workspace of an organization by name. */
  workspaceByName(organization: string, name: string): Workspace | undefined {
    for (const ws of this.workspaces.values()) if (ws.organization === organization && ws.name === name) return ws;
    return undefined;
  }

  /** A workspace's variables in creation order. */
  variablesOf(workspaceId: string): Variable[] {
    return [...this.variables.values()].filter((v) => v.workspaceId === workspaceId);
  }

  /** Adds a configuration version waiting for its upload. */
  addConfigurationVersion(workspaceId: string, opts: { autoQueueRuns: boolean; speculative: boolean; pendingReads: number }): ConfigurationVersion {
    const cv: ConfigurationVersion = {
      id: newId("cv"),
      workspaceId,
      status: "pending",
      autoQueueRuns: opts.autoQueueRuns,
      speculative: opts.speculative,
      source: "tfe-api",
      uploadSecret: newSecret(),
      tarball: undefined,
      errorMessage: undefined,
      pendingReadsLeft: opts.pendingReads,
      createdAt: now(),
    };
    this.configurationVersions.set(cv.id, cv);
    return cv;
  }

  /** Adds a pending run with its (pending) plan and apply. */
  addRun(fields: Pick<Run, "workspaceId" | "configurationVersionId" | "message" | "isDestroy" | "autoApply" | "planOnly" | "variables" | "createdBy">): Run {
    const runId = newId("run");
    const phase = (prefix: string): Phase => {
      const p: Phase = {
        id: newId(prefix),
        runId,
        status: "pending",
        hasChanges: false,
        additions: 0,
        changes: 0,
        destructions: 0,
        logSecret: newSecret(),
        jsonSecret: undefined,
        statusTimestamps: {},
      };
      this.phases.set(p.id, p);
      this.blobs.set(p.logSecret, { contentType: "text/plain", content: "" });
      return p;
    };
    const run: Run = {
      id: runId,
      status: "pending",
      statusTimestamps: { "pending-at": now() },
      hasChanges: false,
      source: "tfe-api",
      createdAt: now(),
      plan: phase("plan"),
      apply: phase("apply"),
      planFile: undefined,
      abort: new AbortController(),
      ...fields,
    };
    this.runs.set(run.id, run);
    return run;
  }

  /** Appends text to a phase's log. */
  appendLog(phase: Phase, text: string): void {
    const blob = this.blobs.get(phase.logSecret);
    if (blob) blob.content += text;
  }

  /** Stores a blob behind a new archivist secret. */
  addBlob(contentType: string, content: string): string {
    const secret = newSecret();
    this.blobs.set(secret, { contentType, content });
    return secret;
  }

  /** The organization a workspace, run, variable, configuration version or phase belongs to. */
  organizationOf(workspaceId: string): string | undefined {
    return this.workspaces.get(workspaceId)?.organization;
  }
}

/** Sets a run's status and its `<status>-at` timestamp. */
export function setRunStatus(run: Run, status: RunStatus): void {
  run.status = status;
  run.statusTimestamps[`${status.replace(/_/g, "-")}-at`] = now();
}

/** Sets a phase's status and its timestamp. */
export function setPhaseStatus(phase: Phase, status: PhaseStatus): void {
  phase.status = status;
  phase.statusTimestamps[`${status}-at`] = now();
}
