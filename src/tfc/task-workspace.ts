import { CtsError } from "../errors/cts-error.ts";
import type { TaskWorkspace } from "../driver/types.ts";
import type { TfcClient } from "./client.ts";
import type { Workspace, WorkspaceSettings } from "./types.ts";

/** The tag every workspace cts manages carries. */
export const SOURCE_TAG = "source:cts";

/** Which workspaces the driver makes and accepts (driver.terraformCloud with defaults filled in). */
export interface WorkspacePolicy {
  organization: string;
  /** Workspace name = prefix + task name. */
  prefix: string;
  /** Added to every workspace besides `source:cts`; never removed. */
  tags: string[];
  /** A found workspace must carry at least one (when the list is not empty). */
  tagsAllowlist: string[];
  /** A found workspace must carry none (wins over the allowlist). */
  tagsDenylist: string[];
}

/** Workspace names TFC accepts: letters, digits, '-' and '_', at most 90 characters. */
const WORKSPACE_NAME = /^[A-Za-z0-9_-]{1,90}$/;

/** The workspace name of a task. */
export function workspaceName(policy: Pick<WorkspacePolicy, "prefix">, task: string): string {
  const name = `${policy.prefix}${task}`;
  if (!WORKSPACE_NAME.test(name))
    throw new CtsError("TASK_NAME_INVALID", "usage", `workspace name '${name}' (prefix + task name) is not a Terraform Cloud workspace name: letters, digits, '-' and '_', at most 90 characters.`, { task });
  return name;
}

/**
 * Finds the task's workspace by name or creates it with CTS's settings (execution mode, agent pool,
 * auto-apply, Terraform version, description, tags `source:cts` + the configured ones); a task
 * naming no version gets `defaultVersion`'s (CTS: the newest compatible one the server offers). A found
 * workspace must be one cts may own (refused otherwise with TFC_WORKSPACE_REFUSED, before anything
 * is changed); then missing tags are added and a configured mode, pool or version is applied.
 * Manual apply on a found workspace is kept.
 */
export async function ensureTaskWorkspace(
  client: TfcClient,
  policy: WorkspacePolicy,
  ws: TaskWorkspace,
  signal?: AbortSignal,
  /** The version a new workspace gets when the task names none (undefined: the server's default). */
  defaultVersion?: () => Promise<string | undefined>,
): Promise<{ workspace: Workspace; created: boolean }> {
  const name = workspaceName(policy, ws.task);
  const wanted = await wantedSettings(client, policy.organization, ws, signal);
  const tags = [...new Set([SOURCE_TAG, ...policy.tags])];
  const forCreate = async (): Promise<WorkspaceSettings> => {
    const version = wanted.terraformVersion === undefined ? await defaultVersion?.() : undefined;
    return version ? { terraformVersion: version } : {};
  };
  const found = await client.workspaces.ensure(policy.organization, { name, description: ws.description ?? "", autoApply: true, ...wanted, executionMode: wanted.executionMode ?? "remote", tags }, signal, forCreate);
  if (found.created) return found;
  let workspace = found.workspace;
  await refuseForeign(client, policy, workspace, ws.task, signal);
  const missing = tags.filter((t) => !workspace.tags.includes(t));
  if (missing.length) await client.workspaces.addTags(workspace.id, missing, signal);
  const update: WorkspaceSettings = {};
  if (wanted.executionMode && wanted.executionMode !== workspace.executionMode) update.executionMode = wanted.executionMode;
  if (wanted.agentPoolId && wanted.agentPoolId !== workspace.agentPoolId) {
    update.executionMode = "agent";
    update.agentPoolId = wanted.agentPoolId;
  }
  if (wanted.terraformVersion && wanted.terraformVersion !== workspace.terraformVersion) update.terraformVersion = wanted.terraformVersion;
  if (Object.keys(update).length) workspace = await client.workspaces.update(workspace.id, update, signal);
  else if (missing.length) workspace = { ...workspace, tags: [...workspace.tags, ...missing] };
  return { workspace, created: false };
}

/** The task's settings in API terms: mode, the pool's id (a name is looked up), the version. */
async function wantedSettings(client: TfcClient, organization: string, ws: TaskWorkspace, signal?: AbortSignal): Promise<WorkspaceSettings> {
  const o = ws.terraformCloudWorkspace ?? {};
  const out: WorkspaceSettings = {};
  if (o.executionMode) out.executionMode = o.executionMode;
  if (o.terraformVersion) out.terraformVersion = o.terraformVersion;
  // Both set: the id wins, as CTS (which only warns).
  if (o.agentPoolId) out.agentPoolId = o.agentPoolId;
  else if (o.agentPoolName) {
    const pool = (await client.agentPools(organization, signal)).find((p) => p.name === o.agentPoolName);
    if (!pool)
      throw new CtsError("TFC_NOT_FOUND", "usage", `agent pool '${o.agentPoolName}' does not exist in organization '${organization}' (or the token may not see it). Check terraformCloudWorkspace.agentPoolName.`, { task: ws.task });
    out.agentPoolId = pool.id;
  }
  return out;
}

/** Refuses a found workspace cts must not take over: VCS-connected, local execution, a foreign configuration, or failing the tag lists. */
async function refuseForeign(client: TfcClient, policy: WorkspacePolicy, w: Workspace, task: string, signal?: AbortSignal): Promise<void> {
  const refuse = (why: string) => {
    throw new CtsError("TFC_WORKSPACE_REFUSED", "usage", `workspace '${w.name}' in organization '${policy.organization}' ${why}`, { task, detail: { workspace: w.name } });
  };
  if (w.vcsConnected) refuse("is connected to a VCS repository; cts uploads configuration through the API and cannot run a VCS-driven workspace. Disconnect it or choose another prefix.");
  if (w.executionMode === "local") refuse("uses local execution; cts needs remote or agent execution. Change the workspace's execution mode or choose another prefix.");
  const deny = policy.tagsDenylist.filter((t) => w.tags.includes(t));
  if (deny.length) refuse(`carries the tag${deny.length > 1 ? "s" : ""} ${deny.join(", ")} of driver.terraformCloud.workspaces.tagsDenylist.`);
  if (policy.tagsAllowlist.length && !policy.tagsAllowlist.some((t) => w.tags.includes(t)))
    refuse(`carries none of the tags of driver.terraformCloud.workspaces.tagsAllowlist (${policy.tagsAllowlist.join(", ")}).`);
  if (w.currentConfigurationVersionId) {
    const cv = await client.configurationVersions.read(w.currentConfigurationVersionId, signal);
    if (cv.source && cv.source !== "tfe-api") refuse(`runs configuration uploaded by '${cv.source}', not through the API as cts uploads it.`);
  }
}
