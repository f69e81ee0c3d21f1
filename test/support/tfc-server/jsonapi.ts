import type { Context } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import type { TfcServerFaults, TfcServerVariants } from "./options.ts";
import type { AgentPool, ConfigurationVersion, Organization, Phase, Run, StateVersion, Store, TokenGrant, Variable, Workspace } from "./store.ts";

/** The media type of every JSON:API document. */
export const JSON_API = "application/vnd.api+json";

/** What every route sees: the data, the switches and where the server listens. */
export interface ServerContext {
  store: Store;
  variants: TfcServerVariants;
  faults: TfcServerFaults;
  /** `http(s)://127.0.0.1:<port>`, known once listening. */
  baseUrl: () => string;
}

/** Hono's per-request variables of this server. */
export type Env = { Variables: { grant: TokenGrant | undefined; token: string | undefined } };

/** A JSON:API error a handler throws; `app.onError` renders it with the variant's shape. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly title: string,
    readonly detail?: string,
    readonly pointer?: string,
  ) {
    super(`${status} ${title}${detail ? `: ${detail}` : ""}`);
  }
}

/** 404 as TFC answers it, for what is missing and for what the token may not see. */
export function notFound(): ApiError {
  return new ApiError(404, "not found");
}

/** Renders an error: JSON:API `errors[]`, or the shapes the variants switch on. */
export function renderError(c: Context<Env>, err: ApiError, ctx: ServerContext): Response {
  const token = c.get("token");
  const echo = ctx.faults.echoTokenInErrors && token ? ` (request token ${token})` : "";
  if (err.status === 401 && ctx.variants.textPlain401) {
    return c.text(`unauthorized${echo}`, 401);
  }
  if (err.status === 409 && ctx.variants.emptyBody409) return c.body(null, 409);
  const error: Record<string, unknown> = { status: String(err.status), title: err.title };
  if (err.detail || echo) error.detail = `${err.detail ?? err.title}${echo}`;
  if (err.pointer) error.source = { pointer: err.pointer };
  return document(c, { errors: [error] }, err.status as ContentfulStatusCode);
}

/** A JSON:API document answer. */
export function document(c: Context<Env>, body: unknown, status: ContentfulStatusCode = 200): Response {
  return c.body(JSON.stringify(body), status, { "Content-Type": JSON_API });
}

/** The `data` of a request document, or 422 when it has none. */
export async function requestData(c: Context<Env>): Promise<{ attributes: Record<string, unknown>; relationships: Record<string, any> }> {
  let body: any;
  try {
    body = JSON.parse(await c.req.text());
  } catch {
    throw new ApiError(400, "bad request", "the body is not JSON");
  }
  const data = body?.data;
  if (!data || typeof data !== "object") throw new ApiError(422, "invalid attribute", "data is missing", "/data");
  return { attributes: data.attributes ?? {}, relationships: data.relationships ?? {} };
}

/** The raw `data` member of a request document (arrays for relationship endpoints). */
export async function requestBody(c: Context<Env>): Promise<any> {
  try {
    return JSON.parse((await c.req.text()) || "{}");
  } catch {
    throw new ApiError(400, "bad request", "the body is not JSON");
  }
}

const rel = (type: string, id: string | undefined) => ({ data: id ? { id, type } : null });

/** An organization resource. */
export function organizationResource(org: Organization) {
  return { id: org.name, type: "organizations", attributes: { name: org.name, email: org.email, "created-at": org.createdAt, "external-id": org.name } };
}

/** An agent pool resource. */
export function agentPoolResource(pool: AgentPool) {
  return { id: pool.id, type: "agent-pools", attributes: { name: pool.name }, relationships: { organization: rel("organizations", pool.organization) } };
}

/** A workspace resource; `omitsWorkspaceExtras` drops resource-count, outputs and locked-by. */
export function workspaceResource(ws: Workspace, ctx: ServerContext) {
  const current = ws.stateVersions.at(-1);
  const attributes: Record<string, unknown> = {
    name: ws.name,
    description: ws.description,
    "execution-mode": ws.executionMode,
    "auto-apply": ws.autoApply,
    "terraform-version": ws.terraformVersion,
    locked: ws.lockedBy !== undefined,
    "tag-names": [...ws.tags],
    "vcs-repo": ws.vcsRepo ? { identifier: ws.vcsRepo.identifier, branch: "" } : null,
    "vcs-repo-identifier": ws.vcsRepo?.identifier ?? null,
    "working-directory": "",
    environment: "default",
    "created-at": ws.createdAt,
    "updated-at": ws.updatedAt,
    actions: { "is-destroyable": true },
  };
  const relationships: Record<string, unknown> = {
    organization: rel("organizations", ws.organization),
    "agent-pool": rel("agent-pools", ws.agentPoolId),
    "current-state-version": rel("state-versions", current?.id),
    "current-configuration-version": rel("configuration-versions", ws.currentConfigurationVersionId),
  };
  if (!ctx.variants.omitsWorkspaceExtras) {
    attributes["resource-count"] = current ? resourceCount(current.state) : 0;
    relationships["locked-by"] = { data: ws.lockedBy ? { id: ws.lockedBy.id, type: ws.lockedBy.type } : null };
    relationships.outputs = { data: current ? stateOutputs(current).map((o) => ({ id: o.id, type: "workspace-outputs" })) : [] };
  }
  return { id: ws.id, type: "workspaces", attributes, relationships, links: { self: `/api/v2/organizations/${ws.organization}/workspaces/${ws.name}` } };
}

function resourceCount(state: string): number {
  try {
    return (JSON.parse(state).resources ?? []).filter((r: { mode?: string }) => r.mode === "managed").length;
  } catch {
    return 0;
  }
}

/** A variable resource; a sensitive variable's value reads back as null. */
export function variableResource(v: Variable) {
  return {
    id: v.id,
    type: "vars",
    attributes: { key: v.key, value: v.sensitive ? null : v.value, description: v.description, category: v.category, hcl: v.hcl, sensitive: v.sensitive },
    relationships: { configurable: { data: { id: v.workspaceId, type: "workspaces" } } },
  };
}

/** A configuration version resource with its upload URL. */
export function configurationVersionResource(cv: ConfigurationVersion, ctx: ServerContext) {
  return {
    id: cv.id,
    type: "configuration-versions",
    attributes: {
      "auto-queue-runs": cv.autoQueueRuns,
      speculative: cv.speculative,
      source: cv.source,
      status: cv.status,
      error: cv.errorMessage ? "unpack_failed" : null,
      "error-message": cv.errorMessage ?? null,
      "upload-url": cv.status === "pending" ? `${ctx.baseUrl()}/_archivist/upload/${cv.uploadSecret}` : null,
      "status-timestamps": {},
    },
  };
}

/** What a run may do next, as TFC's `actions` attribute says. */
export function runActions(run: Run) {
  const waiting = ["planned", "cost_estimated", "policy_checked", "policy_soft_failed"].includes(run.status);
  return {
    "is-confirmable": waiting && run.status !== "policy_soft_failed",
    "is-discardable": waiting || run.status === "pending",
    "is-cancelable": ["pending", "plan_queued", "planning", "apply_queued", "applying"].includes(run.status),
    "is-force-cancelable": false,
  };
}

/** A run resource (counts and has-changes as the variants allow). */
export function runResource(run: Run, ctx: ServerContext) {
  const attributes: Record<string, unknown> = {
    status: run.status,
    "status-timestamps": { ...run.statusTimestamps },
    message: run.message,
    "is-destroy": run.isDestroy,
    "auto-apply": run.autoApply,
    "plan-only": run.planOnly,
    source: run.source,
    "created-at": run.createdAt,
    actions: runActions(run),
    "trigger-reason": "manual",
    variables: run.variables.map((v) => ({ key: v.key, value: v.value })),
  };
  if (!ctx.variants.omitsHasChanges) attributes["has-changes"] = run.hasChanges;
  return {
    id: run.id,
    type: "runs",
    attributes,
    relationships: {
      workspace: rel("workspaces", run.workspaceId),
      "configuration-version": rel("configuration-versions", run.configurationVersionId),
      plan: rel("plans", run.plan.id),
      apply: rel("applies", run.apply.id),
      "created-by": rel("users", run.createdBy),
      ...(run.costEstimate ? { "cost-estimate": rel("cost-estimates", run.costEstimate.id) } : {}),
      ...(run.policyCheck ? { "policy-checks": { data: [{ type: "policy-checks", id: run.policyCheck.id }] } } : {}),
    },
    links: { self: `/api/v2/runs/${run.id}` },
  };
}

/** A policy check resource (`result` as TFC counts it; `sentinel` details are left out). */
export function policyCheckResource(check: NonNullable<Run["policyCheck"]>) {
  const failed = check.softFailed + check.hardFailed;
  return {
    id: check.id,
    type: "policy-checks",
    attributes: {
      status: check.status,
      scope: "organization",
      result: { result: failed === 0, passed: check.passed, "total-failed": failed, "hard-failed": check.hardFailed, "soft-failed": check.softFailed, "advisory-failed": 0, "duration-ms": 0, sentinel: null },
      actions: { "is-overridable": check.status === "soft_failed" },
      permissions: { "can-override": false },
      "status-timestamps": {},
    },
    relationships: { run: rel("runs", check.runId) },
    links: { self: `/api/v2/policy-checks/${check.id}` },
  };
}

/** A cost estimate resource. */
export function costEstimateResource(e: NonNullable<Run["costEstimate"]>) {
  return {
    id: e.id,
    type: "cost-estimates",
    attributes: {
      status: e.status,
      "resources-count": e.resourcesCount,
      "matched-resources-count": e.matchedResourcesCount,
      "unmatched-resources-count": e.resourcesCount - e.matchedResourcesCount,
      "prior-monthly-cost": e.priorMonthlyCost,
      "proposed-monthly-cost": e.proposedMonthlyCost,
      "delta-monthly-cost": e.deltaMonthlyCost,
      "error-message": null,
      "status-timestamps": {},
    },
    links: { self: `/api/v2/cost-estimates/${e.id}` },
  };
}

/** A plan or apply resource. */
export function phaseResource(phase: Phase, type: "plans" | "applies", ctx: ServerContext) {
  const attributes: Record<string, unknown> = {
    status: phase.status,
    "status-timestamps": { ...phase.statusTimestamps },
    "log-read-url": `${ctx.baseUrl()}/_archivist/blob/${phase.logSecret}`,
  };
  const counts = ctx.variants.omitsResourceCounts;
  if (counts !== "absent") {
    const zero = counts === "zero";
    attributes["resource-additions"] = zero ? 0 : phase.additions;
    attributes["resource-changes"] = zero ? 0 : phase.changes;
    attributes["resource-destructions"] = zero ? 0 : phase.destructions;
    attributes["resource-imports"] = 0;
  }
  if (type === "plans") {
    if (!ctx.variants.omitsHasChanges) attributes["has-changes"] = phase.hasChanges;
    attributes["execution-details"] = { mode: "remote" };
  }
  return { id: phase.id, type, attributes, relationships: { run: rel("runs", phase.runId) }, links: { self: `/api/v2/${type}/${phase.id}` } };
}

/** A state version resource. */
export function stateVersionResource(sv: StateVersion) {
  return {
    id: sv.id,
    type: "state-versions",
    attributes: { serial: sv.serial, lineage: sv.lineage, "created-at": sv.createdAt, "resources-processed": true },
    relationships: { run: rel("runs", sv.runId) },
  };
}

/** The outputs of a state version as `state-version-outputs` (sensitive values read back null). */
export function stateOutputs(sv: StateVersion) {
  let outputs: Record<string, { value: unknown; type: unknown; sensitive?: boolean }> = {};
  try {
    outputs = JSON.parse(sv.state).outputs ?? {};
  } catch {
    /* an unreadable state has no outputs */
  }
  return Object.entries(outputs).map(([name, o], i) => ({
    id: `wsout-${sv.id.slice(3)}${i}`,
    type: "state-version-outputs",
    attributes: { name, sensitive: o.sensitive === true, type: typeof o.value === "object" && o.value !== null ? (Array.isArray(o.value) ? "array" : "object") : typeof o.value, value: o.sensitive ? null : o.value, "detailed-type": o.type },
  }));
}

/** A page of a list and its JSON:API pagination meta. */
export function paginate<T>(c: Context<Env>, items: T[]): { data: T[]; meta: unknown; links: unknown } {
  const size = Math.min(100, Math.max(1, Number(c.req.query("page[size]") ?? 20) || 20));
  const number = Math.max(1, Number(c.req.query("page[number]") ?? 1) || 1);
  const total = Math.max(1, Math.ceil(items.length / size));
  return {
    data: items.slice((number - 1) * size, number * size),
    meta: { pagination: { "current-page": number, "page-size": size, "prev-page": number > 1 ? number - 1 : null, "next-page": number < total ? number + 1 : null, "total-pages": total, "total-count": items.length } },
    links: {},
  };
}
