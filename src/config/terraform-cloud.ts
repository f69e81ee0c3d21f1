import { readFileSync } from "node:fs";
import { isAbsolute, resolve } from "node:path";
import { parseDuration } from "../time/duration.ts";
import { CtsError } from "../errors/cts-error.ts";
import { redactSecret } from "../log/logger.ts";
import type { Problem } from "../errors/problems.ts";
import type { TerraformCloudWorkspaceOption } from "../task/task.ts";
import { terraformVersionProblem } from "../tfc/supported-versions.ts";
import type { CtsConfig, TerraformCloudDriverConfig } from "./types.ts";

// The rules of the Terraform Cloud driver's settings, written once for both ways to configure it:
// `driver: { terraformCloud }` in cts.config.ts and CTS's `driver "terraform-cloud"` HCL block
// (src/config/cts-*.ts maps that onto the same shape and calls these). Messages of the workspace
// rules are CTS's own (config/terraform_cloud_workspace.go), so a CTS user sees the same text.

/** HCP Terraform's address, CTS's default `hostname`. */
export const DEFAULT_TFC_HOSTNAME = "https://app.terraform.io";

/**
 * What is wrong with a task's `terraformCloudWorkspace` (`field` names it in messages: e.g.
 * `tasks[2].terraformCloudWorkspace` or `task "web".terraform_cloud_workspace`). `legacy` is the
 * task's deprecated `terraform_version` and its field, checked with the same rule.
 */
export function terraformCloudWorkspaceProblems(ws: TerraformCloudWorkspaceOption | undefined, field: string, legacy?: { version: string; field: string }): Problem[] {
  const problems: Problem[] = [];
  if (ws !== undefined && (typeof ws !== "object" || ws === null || Array.isArray(ws))) return [{ field, message: "must be an object { executionMode, agentPoolId, agentPoolName, terraformVersion }." }];
  const w = (ws ?? {}) as Record<string, unknown>;
  for (const k of Object.keys(w)) {
    if (!["executionMode", "agentPoolId", "agentPoolName", "terraformVersion"].includes(k)) problems.push({ field: `${field}.${k}`, message: "is not a setting. Use executionMode, agentPoolId, agentPoolName or terraformVersion." });
    else if (w[k] !== undefined && typeof w[k] !== "string") problems.push({ field: `${field}.${k}`, message: `must be a string (got ${typeof w[k]}).` });
  }
  if (problems.length) return problems;
  const mode = (w.executionMode as string | undefined) ?? "";
  const pool = Boolean(w.agentPoolId) || Boolean(w.agentPoolName);
  if (mode !== "" && mode !== "remote" && mode !== "agent") problems.push({ field: `${field}.executionMode`, message: `execution mode '${mode}' not supported for CTS, use 'remote' or 'agent' instead` });
  else if (mode === "agent" && !pool) problems.push({ field: `${field}.executionMode`, message: "agent_pool_id or agent_pool_name is required if execution mode is 'agent'" });
  else if (mode !== "agent" && pool) problems.push({ field: `${field}.${w.agentPoolId ? "agentPoolId" : "agentPoolName"}`, message: "agent pool configured when execution mode is not 'agent'" });
  const version = w.terraformVersion as string | undefined;
  if (version) {
    const why = terraformVersionProblem(version);
    if (why) problems.push({ field: `${field}.terraformVersion`, message: why });
  }
  if (legacy?.version) {
    const why = terraformVersionProblem(legacy.version);
    if (why) problems.push({ field: legacy.field, message: why });
  }
  return problems;
}

/**
 * What is wrong with `driver.terraformCloud` (and the driver section as a whole: one driver only).
 * `env` supplies the TFC_* fallbacks, so a missing organization is an error only when
 * TFC_ORGANIZATION is unset too. The token's form is checked here, its value when the driver
 * starts (resolveTerraformCloudToken). `prefix` is the field prefix in messages.
 */
export function terraformCloudDriverProblems(driver: CtsConfig["driver"], env: NodeJS.ProcessEnv = process.env, prefix = "driver"): Problem[] {
  const tfc = driver?.terraformCloud;
  if (tfc === undefined) return [];
  const field = `${prefix}.terraformCloud`;
  if (typeof tfc !== "object" || tfc === null || Array.isArray(tfc))
    return [{ field, message: "must be an object { hostname, organization, token, workspaces, tls, requiredProviders, timeout, lockTimeout, pollInterval }." }];
  const problems: Problem[] = [];
  if (driver?.terraform !== undefined) problems.push({ field: prefix, message: "configures both terraform and terraformCloud. Keep one driver: cts runs every task with the same one." });
  const known = ["hostname", "organization", "token", "workspaces", "tls", "requiredProviders", ...Object.keys(TFC_LIMITS)];
  for (const k of Object.keys(tfc)) if (!known.includes(k)) problems.push({ field: `${field}.${k}`, message: `is not a setting. Use ${known.join(", ")}.` });
  const hostname = tfc.hostname ?? env.TFC_HOSTNAME;
  if (hostname !== undefined && hostnameProblem(hostname)) problems.push({ field: `${field}.hostname`, message: hostnameProblem(hostname)! });
  const org = tfc.organization ?? env.TFC_ORGANIZATION;
  if (org === undefined || org === "") problems.push({ field: `${field}.organization`, message: "is required. Set the organization the workspaces belong to (or TFC_ORGANIZATION)." });
  else if (typeof org !== "string" || !/^[A-Za-z0-9_-]+$/.test(org)) problems.push({ field: `${field}.organization`, message: `'${String(org)}' is not an organization name (letters, digits, '-' and '_').` });
  problems.push(...tokenProblems(tfc.token, `${field}.token`));
  problems.push(...workspacesProblems(tfc.workspaces, `${field}.workspaces`));
  if (tfc.tls !== undefined) {
    if (typeof tfc.tls !== "object" || tfc.tls === null) problems.push({ field: `${field}.tls`, message: "must be an object { caCert, caPath, cert, key, serverName, verify }." });
    else {
      for (const [k, v] of Object.entries(tfc.tls)) {
        if (!["caCert", "caPath", "cert", "key", "serverName", "verify"].includes(k)) problems.push({ field: `${field}.tls.${k}`, message: "is not a setting. Use caCert, caPath, cert, key, serverName or verify." });
        else if (k === "verify" ? typeof v !== "boolean" : typeof v !== "string") problems.push({ field: `${field}.tls.${k}`, message: `must be a ${k === "verify" ? "boolean" : "string"}.` });
      }
      if (Boolean(tfc.tls.cert) !== Boolean(tfc.tls.key)) problems.push({ field: `${field}.tls`, message: "needs cert and key together (a client certificate and its key)." });
    }
  }
  if (tfc.requiredProviders !== undefined) {
    if (typeof tfc.requiredProviders !== "object" || tfc.requiredProviders === null || Array.isArray(tfc.requiredProviders))
      problems.push({ field: `${field}.requiredProviders`, message: 'must map provider names to { source, version }, e.g. { local: { source: "hashicorp/local" } }.' });
  }
  problems.push(...limitProblems(tfc, field));
  return problems;
}

/**
 * The driver's limits (cts's own settings; CTS's HCL has none): each a duration, its default, and
 * the range it must fall in. `pollInterval` is the longest wait between reads of a run (the poll
 * starts at 100 ms after each status change and doubles up to it), of a lock and of an upload.
 */
export const TFC_LIMITS = {
  timeout: { defaultMs: 30 * 60_000, minMs: 1_000, maxMs: 24 * 3_600_000, example: "30m", what: "how long a run is followed before TFC_RUN_TIMEOUT" },
  lockTimeout: { defaultMs: 5 * 60_000, minMs: 0, maxMs: 24 * 3_600_000, example: "5m", what: "how long a workspace locked by someone else is waited for" },
  pollInterval: { defaultMs: 1_000, minMs: 100, maxMs: 60_000, example: "1s", what: "the longest wait between reads of a run" },
} as const;

function limitProblems(tfc: TerraformCloudDriverConfig, field: string): Problem[] {
  const problems: Problem[] = [];
  for (const [key, rule] of Object.entries(TFC_LIMITS)) {
    const value = (tfc as Record<string, unknown>)[key];
    if (value === undefined) continue;
    const ms = typeof value === "string" || typeof value === "number" ? parseDuration(value) : undefined;
    const range = `between ${durationWords(rule.minMs)} and ${durationWords(rule.maxMs)}`;
    if (ms === undefined) problems.push({ field: `${field}.${key}`, message: `'${String(value).slice(0, 40)}' is not a duration (${rule.what}). Use milliseconds or e.g. "${rule.example}", ${range}.` });
    else if (ms < rule.minMs || ms > rule.maxMs) problems.push({ field: `${field}.${key}`, message: `must be ${range} (${rule.what}); got ${String(value).slice(0, 40)}.` });
  }
  return problems;
}

function durationWords(ms: number): string {
  if (ms === 0) return "0s";
  if (ms % 3_600_000 === 0) return `${ms / 3_600_000}h`;
  if (ms % 60_000 === 0) return `${ms / 60_000}m`;
  if (ms % 1_000 === 0) return `${ms / 1_000}s`;
  return `${ms}ms`;
}

/** Why a hostname is not a host name or http(s) URL, or undefined. */
export function hostnameProblem(hostname: unknown): string | undefined {
  if (typeof hostname !== "string" || hostname.trim() === "") return "must be a host name or URL, e.g. app.terraform.io or https://tfe.example.com.";
  const raw = hostname.trim();
  try {
    const url = new URL(/^[a-z][a-z0-9+.-]*:\/\//i.test(raw) ? raw : `https://${raw}`);
    if (url.protocol !== "https:" && url.protocol !== "http:") return `'${raw}' is not an http(s) URL. Use e.g. https://tfe.example.com.`;
    if (url.username || url.password) return "must not carry credentials; set the token in driver.terraformCloud.token.";
    if (url.pathname !== "/" || url.search || url.hash) return `'${raw}' has a path; give only the scheme, host and port (the API is under /api/v2).`;
    return undefined;
  } catch {
    return `'${raw}' is not a host name or URL. Use e.g. app.terraform.io or https://tfe.example.com.`;
  }
}

function tokenProblems(token: TerraformCloudDriverConfig["token"], field: string): Problem[] {
  // Unset: TFC_TOKEN, read when the driver starts (commands that never reach Terraform Cloud, such as synth and diff, need no token).
  if (token === undefined) return [];
  if (typeof token === "string") return token.trim() === "" ? [{ field, message: "is empty. Set an API token (better from { env } or { file } than in the config)." }] : [];
  if (typeof token === "object" && token !== null && !Array.isArray(token)) {
    const keys = Object.keys(token);
    if (keys.length === 1 && keys[0] === "env" && typeof (token as { env: unknown }).env === "string" && (token as { env: string }).env) return [];
    if (keys.length === 1 && keys[0] === "file" && typeof (token as { file: unknown }).file === "string" && (token as { file: string }).file) return [];
  }
  return [{ field, message: 'must be a string, { env: "NAME" } or { file: "/path" }.' }];
}

function workspacesProblems(ws: TerraformCloudDriverConfig["workspaces"], field: string): Problem[] {
  if (ws === undefined) return [];
  if (typeof ws !== "object" || ws === null || Array.isArray(ws)) return [{ field, message: "must be an object { prefix, tags, tagsAllowlist, tagsDenylist }." }];
  const problems: Problem[] = [];
  for (const [k, v] of Object.entries(ws)) {
    if (k === "prefix") {
      if (v !== undefined && (typeof v !== "string" || !/^[A-Za-z0-9_-]*$/.test(v))) problems.push({ field: `${field}.prefix`, message: "must be letters, digits, '-' and '_' (workspace names allow no other characters)." });
    } else if (k === "tags" || k === "tagsAllowlist" || k === "tagsDenylist") {
      if (v !== undefined && (!Array.isArray(v) || v.some((t) => typeof t !== "string" || !TAG.test(t))))
        problems.push({ field: `${field}.${k}`, message: "must be a list of tags (letters, digits, ':', '-' and '_'; lower case as TFC stores them)." });
    } else problems.push({ field: `${field}.${k}`, message: "is not a setting. Use prefix, tags, tagsAllowlist or tagsDenylist." });
  }
  return problems;
}

/** A TFC tag: lower-case letters, digits, ':', '-', '_' (TFC lower-cases tags; cts asks for them as stored). */
const TAG = /^[a-z0-9][a-z0-9:_-]*$/;

/**
 * The token the driver uses, read when the driver starts: the configured string, the `{ env }`
 * variable, the `{ file }` (trimmed; relative to `dir`), else TFC_TOKEN. It is registered with the
 * log redactor at once, so no log, event or error text can carry it.
 */
export function resolveTerraformCloudToken(tfc: TerraformCloudDriverConfig, dir: string, env: NodeJS.ProcessEnv = process.env): string {
  const t = tfc.token;
  let token: string | undefined;
  if (typeof t === "string") token = t;
  else if (t && "env" in t) {
    token = env[t.env];
    if (!token) throw new CtsError("CONFIG_INVALID", "usage", `driver.terraformCloud.token reads the environment variable ${t.env}, which is not set. Set it in cts's environment.`);
  } else if (t && "file" in t) {
    const path = isAbsolute(t.file) ? t.file : resolve(dir, t.file);
    try {
      token = readFileSync(path, "utf8").trim();
    } catch (cause) {
      throw new CtsError("CONFIG_INVALID", "usage", `driver.terraformCloud.token reads ${path}, which cannot be read (${(cause as Error).message}). Create it or fix the path.`, { cause });
    }
    if (!token) throw new CtsError("CONFIG_INVALID", "usage", `driver.terraformCloud.token: ${path} is empty. Write the API token into it.`);
  } else token = env.TFC_TOKEN;
  if (!token) throw new CtsError("CONFIG_INVALID", "usage", "driver.terraformCloud.token is not set. Set an API token in the config ({ env } or { file }) or in TFC_TOKEN.");
  redactSecret(token);
  return token;
}

/** The driver's settings with the TFC_* fallbacks and defaults applied (token excluded: resolveTerraformCloudToken). */
export function terraformCloudSettings(
  tfc: TerraformCloudDriverConfig,
  env: NodeJS.ProcessEnv = process.env,
): { hostname: string; organization: string; prefix: string; tags: string[]; tagsAllowlist: string[]; tagsDenylist: string[]; runTimeoutMs: number; lockTimeoutMs: number; pollIntervalMs: number } {
  const limit = (key: keyof typeof TFC_LIMITS) => {
    const v = tfc[key];
    return (v === undefined ? undefined : parseDuration(v)) ?? TFC_LIMITS[key].defaultMs;
  };
  return {
    runTimeoutMs: limit("timeout"),
    lockTimeoutMs: limit("lockTimeout"),
    pollIntervalMs: limit("pollInterval"),
    hostname: tfc.hostname ?? env.TFC_HOSTNAME ?? DEFAULT_TFC_HOSTNAME,
    organization: tfc.organization ?? env.TFC_ORGANIZATION ?? "",
    prefix: tfc.workspaces?.prefix ?? "",
    tags: [...(tfc.workspaces?.tags ?? [])],
    tagsAllowlist: [...(tfc.workspaces?.tagsAllowlist ?? [])],
    tagsDenylist: [...(tfc.workspaces?.tagsDenylist ?? [])],
  };
}
