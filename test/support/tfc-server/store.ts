import { newId, newSecret } from "./ids.ts";
import type { Permission, TokenGrant, Organization, AgentPool, StateVersion, Workspace, Variable, ConfigurationVersion, RunStatus, PhaseStatus, Phase, Run, Blob, TerraformVersion } from "./model.ts";

export type { Permission, TokenGrant, Organization, AgentPool, StateVersion, Workspace, Variable, ConfigurationVersion, RunStatus, PhaseStatus, Phase, Run, Blob } from "./model.ts";

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
  /** Entitlements by organization (tests may take one away); unset: every feature the driver uses. */
  readonly entitlements = new Map<string, Record<string, boolean>>();

  /** Adds an organization. */
  addOrganization(name: string): Organization {
    const org = { name, email: `admin@${name}.example`, createdAt: now() };
    this.organizations.set(name, org);
    return org;
  }

  /** The Terraform versions the admin API lists, in the order they were added. */
  readonly terraformVersions: TerraformVersion[] = [];

  /** Adds a Terraform version the server offers (enabled, official, neither beta nor deprecated unless said). */
  addTerraformVersion(version: string, flags: Partial<Pick<TerraformVersion, "enabled" | "beta" | "deprecated" | "official">> = {}): TerraformVersion {
    const v = { id: newId("tool"), version, enabled: true, beta: false, deprecated: false, official: true, ...flags };
    this.terraformVersions.push(v);
    return v;
  }

  /** Adds a token seeing the given organizations (a site admin also sees the admin API). */
  addToken(token: string, organizations: Record<string, Permission>, username = "cts-test", siteAdmin = false): TokenGrant {
    const grant = { token, userId: newId("user"), username, organizations, ...(siteAdmin ? { siteAdmin } : {}) };
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
