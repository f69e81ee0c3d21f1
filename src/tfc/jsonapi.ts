import { badAnswer, type CallSite } from "./errors.ts";
import type { AgentPool, Apply, ConfigurationVersion, CostEstimate, Organization, Plan, PolicyCheck, Run, StateOutput, Variable, Workspace } from "./types.ts";

/** A JSON:API resource object. */
export interface Resource {
  id: string;
  type: string;
  attributes: Record<string, unknown>;
  relationships: Record<string, { data?: unknown }>;
}

/** The single resource of a document (`data`), or TFC_BAD_ANSWER. */
export function one(doc: any, site: CallSite): Resource {
  const data = doc?.data;
  if (!data || typeof data !== "object" || Array.isArray(data) || typeof data.id !== "string") throw badAnswer(site, "no resource in `data`");
  return resource(data);
}

/** The resources of a list document (`data` array), or TFC_BAD_ANSWER. */
export function many(doc: any, site: CallSite): Resource[] {
  if (!Array.isArray(doc?.data)) throw badAnswer(site, "no list in `data`");
  return doc.data.filter((d: any) => d && typeof d.id === "string").map(resource);
}

/** The `included` resources of a document (none when the server ignored `include`). */
export function included(doc: any): Resource[] {
  return Array.isArray(doc?.included) ? doc.included.filter((d: any) => d && typeof d.id === "string").map(resource) : [];
}

/** The next page number of a paginated list, if any. */
export function nextPage(doc: any): number | undefined {
  const n = doc?.meta?.pagination?.["next-page"];
  return typeof n === "number" && n > 0 ? n : undefined;
}

function resource(d: any): Resource {
  return { id: d.id, type: String(d.type ?? ""), attributes: d.attributes && typeof d.attributes === "object" ? d.attributes : {}, relationships: d.relationships && typeof d.relationships === "object" ? d.relationships : {} };
}

const str = (r: Resource, k: string): string | undefined => (typeof r.attributes[k] === "string" ? (r.attributes[k] as string) : undefined);
const bool = (r: Resource, k: string): boolean | undefined => (typeof r.attributes[k] === "boolean" ? (r.attributes[k] as boolean) : undefined);
const num = (r: Resource, k: string): number | undefined => (typeof r.attributes[k] === "number" ? (r.attributes[k] as number) : undefined);

/** The id a to-one relationship points at. */
export function relId(r: Resource, name: string): string | undefined {
  const data = r.relationships[name]?.data as { id?: unknown } | null | undefined;
  return data && typeof data.id === "string" ? data.id : undefined;
}

/** An organization. */
export function toOrganization(r: Resource): Organization {
  return { name: str(r, "name") ?? r.id, email: str(r, "email") };
}

/** An agent pool. */
export function toAgentPool(r: Resource): AgentPool {
  return { id: r.id, name: str(r, "name") ?? "" };
}

/** A workspace (absent optional attributes stay undefined). */
export function toWorkspace(r: Resource): Workspace {
  const lockedBy = r.relationships["locked-by"]?.data as { id?: string; type?: string } | null | undefined;
  const tags = r.attributes["tag-names"];
  return {
    id: r.id,
    name: str(r, "name") ?? "",
    organization: relId(r, "organization"),
    description: str(r, "description") ?? "",
    executionMode: str(r, "execution-mode") ?? "remote",
    autoApply: bool(r, "auto-apply") ?? false,
    terraformVersion: str(r, "terraform-version") ?? "",
    tags: Array.isArray(tags) ? tags.filter((t): t is string => typeof t === "string") : [],
    locked: bool(r, "locked") ?? false,
    lockedBy: lockedBy?.id ? { id: lockedBy.id, type: String(lockedBy.type ?? "") } : undefined,
    vcsConnected: r.attributes["vcs-repo"] !== null && r.attributes["vcs-repo"] !== undefined,
    agentPoolId: relId(r, "agent-pool") ?? str(r, "agent-pool-id"),
    resourceCount: num(r, "resource-count"),
    currentConfigurationVersionId: relId(r, "current-configuration-version"),
  };
}

/** A variable; a sensitive variable's value (null on the wire) is "". */
export function toVariable(r: Resource): Variable {
  return {
    id: r.id,
    key: str(r, "key") ?? "",
    value: str(r, "value") ?? "",
    description: str(r, "description") ?? "",
    category: str(r, "category") === "env" ? "env" : "terraform",
    hcl: bool(r, "hcl") ?? false,
    sensitive: bool(r, "sensitive") ?? false,
  };
}

/** A configuration version. */
export function toConfigurationVersion(r: Resource): ConfigurationVersion {
  return {
    id: r.id,
    status: str(r, "status") ?? "",
    uploadUrl: str(r, "upload-url"),
    speculative: bool(r, "speculative") ?? false,
    autoQueueRuns: bool(r, "auto-queue-runs") ?? true,
    source: str(r, "source"),
    errorMessage: str(r, "error-message") ?? str(r, "error"),
  };
}

/** A run, with the plan and apply from `included` when the server sent them. */
export function toRun(r: Resource, with_: Resource[] = []): Run {
  const actions = (r.attributes.actions ?? {}) as Record<string, unknown>;
  const timestamps = r.attributes["status-timestamps"];
  const planId = relId(r, "plan");
  const applyId = relId(r, "apply");
  const plan = with_.find((x) => x.type === "plans" && x.id === planId);
  const apply = with_.find((x) => x.type === "applies" && x.id === applyId);
  return {
    id: r.id,
    status: str(r, "status") ?? "",
    statusTimestamps: timestamps && typeof timestamps === "object" ? (timestamps as Record<string, string>) : {},
    message: str(r, "message") ?? "",
    isDestroy: bool(r, "is-destroy") ?? false,
    autoApply: bool(r, "auto-apply") ?? false,
    planOnly: bool(r, "plan-only") ?? false,
    hasChanges: bool(r, "has-changes"),
    actions: { isConfirmable: actions["is-confirmable"] === true, isDiscardable: actions["is-discardable"] === true, isCancelable: actions["is-cancelable"] === true },
    workspaceId: relId(r, "workspace"),
    configurationVersionId: relId(r, "configuration-version"),
    planId,
    applyId,
    costEstimateId: relId(r, "cost-estimate"),
    included: { ...(plan ? { plan: toPlan(plan) } : {}), ...(apply ? { apply: toApply(apply) } : {}) },
  };
}

/** A plan (counts undefined where the server leaves them out). */
export function toPlan(r: Resource): Plan {
  return {
    id: r.id,
    status: str(r, "status") ?? "",
    hasChanges: bool(r, "has-changes"),
    additions: num(r, "resource-additions"),
    changes: num(r, "resource-changes"),
    destructions: num(r, "resource-destructions"),
    logReadUrl: str(r, "log-read-url"),
  };
}

/** An apply. */
export function toApply(r: Resource): Apply {
  return {
    id: r.id,
    status: str(r, "status") ?? "",
    additions: num(r, "resource-additions"),
    changes: num(r, "resource-changes"),
    destructions: num(r, "resource-destructions"),
    logReadUrl: str(r, "log-read-url"),
  };
}

/** A state version output. */
export function toStateOutput(r: Resource): StateOutput {
  return { name: str(r, "name") ?? "", sensitive: bool(r, "sensitive") ?? false, value: r.attributes.value ?? null };
}

/** A policy check; its `result` counts (absent while it runs) read as 0. */
export function toPolicyCheck(r: Resource): PolicyCheck {
  const result = (r.attributes.result ?? {}) as Record<string, unknown>;
  const n = (k: string) => (typeof result[k] === "number" ? (result[k] as number) : 0);
  return { id: r.id, status: str(r, "status") ?? "", passed: n("passed"), totalFailed: n("total-failed"), hardFailed: n("hard-failed"), softFailed: n("soft-failed"), advisoryFailed: n("advisory-failed") };
}

/** A cost estimate (its costs are decimal strings; a server sending numbers is read the same). */
export function toCostEstimate(r: Resource): CostEstimate {
  const cost = (k: string) => (typeof r.attributes[k] === "number" ? String(r.attributes[k]) : str(r, k));
  return {
    id: r.id,
    status: str(r, "status") ?? "",
    priorMonthlyCost: cost("prior-monthly-cost"),
    proposedMonthlyCost: cost("proposed-monthly-cost"),
    deltaMonthlyCost: cost("delta-monthly-cost"),
    resourcesCount: num(r, "resources-count"),
    matchedResourcesCount: num(r, "matched-resources-count"),
  };
}
