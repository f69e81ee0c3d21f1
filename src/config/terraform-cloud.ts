import type { TerraformCloudWorkspaceOption } from "../task/task.ts";

/**
 * CTS's rules for the Terraform Cloud driver's per-task workspace settings
 * (`config/terraform_cloud_workspace.go` Validate, CTS-TFC-NOTES §1), with CTS's messages, for
 * every config form (cts.config.ts, CTS HCL, API task bodies).
 */

/** The Terraform versions CTS v0.9.0 accepts (`version/terraform.go`). */
export const TERRAFORM_VERSION_CONSTRAINT = ">= 0.13.0, <= 1.14.3";
const MIN: [number, number, number] = [0, 13, 0];
const MAX: [number, number, number] = [1, 14, 3];

/** A workspace rule broken: `field` is the option (`executionMode`), `message` CTS's text. */
export interface WorkspaceProblem {
  field: keyof TerraformCloudWorkspaceOption;
  message: string;
}

/** Everything wrong with a task's workspace settings (empty: valid). Empty strings count as unset, as in CTS. */
export function workspaceProblems(ws: TerraformCloudWorkspaceOption): WorkspaceProblem[] {
  const out: WorkspaceProblem[] = [];
  const mode = ws.executionMode ?? "";
  const pool = (ws.agentPoolId ?? "") !== "" || (ws.agentPoolName ?? "") !== "";
  if (mode !== "" && mode !== "remote" && mode !== "agent")
    out.push({ field: "executionMode", message: `execution mode '${String(mode)}' not supported for CTS, use 'remote' or 'agent' instead` });
  else if (mode === "agent" && !pool) out.push({ field: "executionMode", message: "agent_pool_id or agent_pool_name is required if execution mode is 'agent'" });
  else if (mode !== "agent" && pool) out.push({ field: ws.agentPoolId ? "agentPoolId" : "agentPoolName", message: "agent pool configured when execution mode is not 'agent'" });
  const version = terraformVersionProblem(ws.terraformVersion);
  if (version) out.push({ field: "terraformVersion", message: version });
  return out;
}

/** CTS's warning when both pool fields are set (not an error: the id is used). */
export function workspaceWarnings(ws: TerraformCloudWorkspaceOption): string[] {
  return ws.agentPoolId && ws.agentPoolName ? ["agent_pool_id and agent_pool_name are both configured, agent_pool_id will be used"] : [];
}

const SEMVER = /^v?(\d+)((?:\.\d+)*)(?:-([0-9A-Za-z~-]+(?:\.[0-9A-Za-z~-]+)*))?(?:\+([0-9A-Za-z~-]+(?:\.[0-9A-Za-z~-]+)*))?$/;

/** An exact Terraform version within CTS's constraint; undefined or "" is fine (the organization's newest). */
export function terraformVersionProblem(version: string | undefined): string | undefined {
  if (version === undefined || version === "") return undefined;
  const m = SEMVER.exec(version);
  const parts = m ? [m[1]!, ...m[2]!.split(".").slice(1)].map(Number) : [];
  if (!m || parts.length > 3) return `Malformed version: ${version}`;
  if (version.split(".").length < 3) return `provide the exact Terraform version to install: ${version}`;
  const core = parts as [number, number, number];
  // As go-version: a pre-release never satisfies a constraint written without one.
  const inRange = !m[3] && compare(core, MIN) >= 0 && compare(core, MAX) <= 0;
  if (!inRange) return `Terraform version is not supported by Consul-Terraform-Sync, try updating to a different version (${TERRAFORM_VERSION_CONSTRAINT}): ${version}`;
  return undefined;
}

function compare(a: [number, number, number], b: [number, number, number]): number {
  for (let i = 0; i < 3; i++) if (a[i] !== b[i]) return a[i]! - b[i]!;
  return 0;
}

/** The workspace a task runs in: prefix + task name (CTS's `workspaces.prefix`). */
export function workspaceName(prefix: string | undefined, task: string): string {
  return `${prefix ?? ""}${task}`;
}

/** The settings as applied: the block's version wins over the deprecated task `terraform_version`. */
export function effectiveWorkspace(block: TerraformCloudWorkspaceOption | undefined, taskVersion: string | undefined): TerraformCloudWorkspaceOption | undefined {
  const version = block?.terraformVersion || taskVersion || undefined;
  const out: TerraformCloudWorkspaceOption = { ...block };
  if (version) out.terraformVersion = version;
  else delete out.terraformVersion;
  return Object.keys(out).length ? out : undefined;
}
