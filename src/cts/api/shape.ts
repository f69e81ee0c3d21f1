import { formatDuration, parseDuration } from "../../time/duration.ts";
import type { TaskView } from "../../runtime/controller.ts";
import type { TaskEvent, TaskStatus } from "../../runtime/events.ts";
import type { DriftState } from "../../runtime/drift.ts";
import type { HeldPlan } from "../../runtime/holds.ts";
import type { OutputsRecord } from "../../runtime/interfaces.ts";
import type { TaskOutputs } from "../../driver/types.ts";
import type { ModuleTaskSpec } from "../../synth/task-ref.ts";
import type { Condition, TaskInputs } from "../../task/conditions.ts";
import type { TerraformCloudWorkspaceOption } from "../../task/task.ts";
import { encodeVariables } from "./variables.ts";

/** A task in CTS's API JSON shape (plus `origin`, which says where the task was defined). */
export interface CtsTask {
  name: string;
  description: string;
  enabled: boolean;
  /** Module source; for a task class, "(task class <Name>)". */
  module: string;
  /** The module version; "" when none (CTS always answers the key). */
  version: string;
  /** CTS's shape: each value HCL-encoded text (variables.ts). */
  variables: Record<string, string>;
  providers: string[];
  condition: Record<string, unknown>;
  module_input: Record<string, unknown>;
  buffer_period: { enabled: boolean; min: string; max: string } | Record<string, unknown>;
  /** Beyond CTS: "config" (cts.config.ts) or "api" (created through the API). */
  origin: "config" | "api";
  /** Terraform Cloud driver: the task's workspace settings, present only when set (as in CTS). */
  terraform_cloud_workspace?: Record<string, string>;
  /** Beyond CTS, only for a task in a chain: the tasks it runs after (`after`; CTS HCL and the API: `cts_after`). */
  cts_after?: string[];
  /** Beyond CTS, only for an API task created with them: its plan guards and approval, and the CTS HCL keys of the same names. */
  guards?: Record<string, unknown>;
  cts_allow_empty?: boolean;
  cts_outputs?: string[];
  cts_sensitive_outputs?: string[];
}

/** A task's status entry, as `/v1/status/tasks` returns it. */
export interface CtsTaskStatus {
  task_name: string;
  status: TaskStatus;
  enabled: boolean;
  /** Deprecated in CTS, still answered: providers and services named by the stored events. */
  providers: string[];
  services: string[];
  events_url: string;
  events?: TaskEvent[];
  /** Beyond CTS, only while Consul is unreachable (status is then "unknown"): the applied state may no longer match Consul. */
  stale?: { since: string; last_status: TaskStatus; reason: string };
  /** Beyond CTS, only for tasks with drift checks (or checked on demand): settings and the last finding. */
  drift?: CtsDriftStatus;
  /** Beyond CTS, only while the task holds a plan waiting for approval. */
  held?: HeldPlanView;
  /** Beyond CTS, only once the task applied outputs: its latest Terraform outputs (sensitive values redacted) and when they were read. */
  outputs?: OutputsView;
}

/** A task's outputs as the API shows them: `values` by name, each `{ value, type?, sensitive }`. */
export interface OutputsView {
  updated_at: string;
  values: TaskOutputs;
}

/** Beyond CTS: a task's kept outputs in the API's shape. */
export function outputsToApi(o: OutputsRecord): OutputsView {
  return { updated_at: o.updatedAt, values: o.outputs };
}

/** A task's drift status as the API shows it. */
export interface CtsDriftStatus {
  /** Whether checks run on a timer. */
  enabled: boolean;
  /** The interval ("30m"), empty when off. */
  every: string;
  correct: boolean;
  /** The last check's finding, or "unchecked". */
  status: DriftState | "unchecked";
  checked_at?: string;
  changes?: { add: number; change: number; destroy: number };
  applied?: { add: number; change: number; destroy: number };
  error?: string;
}

/** A task view's drift status in the API's shape (undefined when it has none). */
export function driftToCts(v: TaskView): CtsDriftStatus | undefined {
  const d = v.drift;
  if (!d) return undefined;
  const last = d.last;
  return {
    enabled: d.enabled,
    every: d.enabled ? formatDuration(d.everyMs) : "",
    correct: d.correct,
    status: last?.state ?? "unchecked",
    ...(last ? { checked_at: last.checkedAt } : {}),
    ...(last?.changes ? { changes: last.changes } : {}),
    ...(last?.applied ? { applied: last.applied } : {}),
    ...(last?.error ? { error: last.error } : {}),
  };
}

/** How the module field shows a task class (it has no module; this cannot be mistaken for one). */
export function classModuleLabel(className: string): string {
  return `(task class ${className || "anonymous"})`;
}

/** A condition in CTS's shape: `{ services: {...} }`, `{ catalog_services: {...} }`, `{ consul_kv: {...} }`, `{ schedule: {...} }`. */
export function conditionToCts(c: Condition): Record<string, unknown> {
  switch (c.kind) {
    case "services": {
      const q = c.query;
      return {
        services: {
          ...(q.names?.length ? { names: [...q.names] } : { regexp: q.regexp ?? "" }),
          datacenter: q.datacenter ?? "",
          namespace: q.namespace ?? "",
          filter: q.filter ?? "",
          cts_user_defined_meta: { ...(q.userMeta ?? {}) },
          // cts's own (CTS has none), shown only when set so CTS's shape stays as it was.
          ...(q.peer ? { peer: q.peer } : {}),
          ...(q.partition ? { partition: q.partition } : {}),
          ...(q.samenessGroup ? { sameness_group: q.samenessGroup } : {}),
          use_as_module_input: true,
          // cts's own, only when set: which changes run the task.
          ...(c.trigger !== undefined ? { cts_trigger: c.trigger } : {}),
        },
      };
    }
    case "catalog-services":
      return {
        catalog_services: {
          regexp: c.query.regexp,
          datacenter: c.query.datacenter ?? "",
          namespace: c.query.namespace ?? "",
          node_meta: { ...(c.query.nodeMeta ?? {}) },
          use_as_module_input: true,
        },
      };
    case "consul-kv":
      return {
        consul_kv: {
          path: c.query.path,
          recurse: c.query.recurse ?? false,
          datacenter: c.query.datacenter ?? "",
          namespace: c.query.namespace ?? "",
          use_as_module_input: true,
        },
      };
    // cts's own conditions (CTS has none), in the same style.
    case "nodes":
      return {
        nodes: {
          datacenter: c.query.datacenter ?? "",
          partition: c.query.partition ?? "",
          filter: c.query.filter ?? "",
          node_meta: { ...(c.query.nodeMeta ?? {}) },
          use_as_module_input: true,
        },
      };
    case "intentions":
      return {
        intentions: {
          destination: c.query.destination ?? "",
          datacenter: c.query.datacenter ?? "",
          namespace: c.query.namespace ?? "",
          partition: c.query.partition ?? "",
          use_as_module_input: true,
        },
      };
    case "config-entries":
      return {
        config_entries: {
          kind: c.query.kind,
          name: c.query.name ?? "",
          datacenter: c.query.datacenter ?? "",
          namespace: c.query.namespace ?? "",
          partition: c.query.partition ?? "",
          use_as_module_input: true,
        },
      };
    case "schedule":
      return { schedule: { cron: c.cron } };
  }
}

/** Module inputs in CTS's shape: `{ services?: {...}, consul_kv?: {...} }`. */
export function inputsToCts(inputs: TaskInputs | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (inputs?.services) {
    const { use_as_module_input: _, ...services } = conditionToCts(inputs.services).services as Record<string, unknown>;
    out.services = services;
  }
  if (inputs?.kv) {
    const { use_as_module_input: _, ...kv } = conditionToCts(inputs.kv).consul_kv as Record<string, unknown>;
    out.consul_kv = kv;
  }
  for (const [c, key] of [[inputs?.nodes, "nodes"], [inputs?.intentions, "intentions"], [inputs?.configEntries, "config_entries"]] as const) {
    if (!c) continue;
    const { use_as_module_input: _, ...rest } = conditionToCts(c)[key] as Record<string, unknown>;
    out[key] = rest;
  }
  return out;
}

/** A task as `GET /v1/tasks/{name}` returns it; the buffer period is the effective one. */
export function taskToCts(v: TaskView): CtsTask {
  const isModule = typeof v.module === "string";
  return {
    name: v.name,
    description: v.description,
    enabled: v.enabled,
    module: isModule ? v.module! : classModuleLabel(v.className),
    version: isModule && v.version ? v.version : "",
    variables: encodeVariables(v.variables),
    providers: [],
    condition: conditionToCts(v.condition as Condition),
    module_input: inputsToCts(v.inputs as TaskInputs),
    // A disabled buffer period is 0s/0s in CTS (its config zeroes both).
    buffer_period: v.bufferPeriod.enabled
      ? { enabled: true, min: formatDuration(v.bufferPeriod.min), max: formatDuration(v.bufferPeriod.max) }
      : { enabled: false, min: "0s", max: "0s" },
    origin: v.origin,
    ...tfcWorkspaceToCts(v.spec?.terraformCloudWorkspace),
    // cts's own, only when set: a task without a chain answers exactly CTS's shape.
    ...(v.after?.length ? { cts_after: [...v.after] } : {}),
    // An API task's other own keys, as it was created with them.
    ...(v.spec ? ctsOwnKeys(v.spec) : {}),
  };
}

/** CTS's `terraform_cloud_workspace`, echoed only when a setting is present (as CTS does). */
function tfcWorkspaceToCts(ws: TerraformCloudWorkspaceOption | undefined): Record<string, unknown> {
  if (!ws) return {};
  const out: Record<string, string> = {};
  if (ws.executionMode) out.execution_mode = ws.executionMode;
  if (ws.agentPoolId) out.agent_pool_id = ws.agentPoolId;
  if (ws.agentPoolName) out.agent_pool_name = ws.agentPoolName;
  if (ws.terraformVersion) out.terraform_version = ws.terraformVersion;
  return Object.keys(out).length ? { terraform_cloud_workspace: out } : {};
}

/** A module task's own spec in CTS's shape (what PATCH merges into): the buffer period as written. */
export function specToCts(spec: ModuleTaskSpec): Record<string, unknown> {
  const bp = spec.bufferPeriod;
  const dur = (d: string | number | undefined) => (d === undefined ? undefined : typeof d === "number" ? formatDuration(d) : formatDuration(parseDuration(d) ?? 0));
  return {
    name: spec.name,
    description: spec.description ?? "",
    enabled: spec.enabled ?? true,
    module: spec.module,
    ...(spec.version ? { version: spec.version } : {}),
    variables: { ...(spec.variables ?? {}) },
    condition: conditionToCts(spec.condition),
    module_input: inputsToCts(spec.inputs),
    ...tfcWorkspaceToCts(spec.terraformCloudWorkspace),
    ...(spec.after?.length ? { cts_after: [...spec.after] } : {}),
    // cts's own keys, only when set (a task without them answers exactly CTS's shape); a PATCH
    // rebuilds the task from this, so every field a create takes must come back here.
    ...ctsOwnKeys(spec),
    ...(bp === false
      ? { buffer_period: { enabled: false } }
      : bp
        ? { buffer_period: { enabled: true, ...(bp.min !== undefined ? { min: dur(bp.min) } : {}), ...(bp.max !== undefined ? { max: dur(bp.max) } : {}) } }
        : {}),
  };
}

/** cts's own keys of an API task that are set: its guards block, cts_allow_empty, cts_outputs, cts_sensitive_outputs. */
function ctsOwnKeys(spec: ModuleTaskSpec): Record<string, unknown> {
  return {
    ...guardsToCts(spec),
    ...(spec.allowEmpty !== undefined ? { cts_allow_empty: spec.allowEmpty } : {}),
    ...(spec.outputs !== undefined ? { cts_outputs: [...spec.outputs] } : {}),
    ...(spec.sensitiveOutputs !== undefined ? { cts_sensitive_outputs: [...spec.sensitiveOutputs] } : {}),
  };
}

/** A task's plan guards and approval as the API's `guards` block (the keys of the CTS HCL block). */
function guardsToCts(spec: ModuleTaskSpec): { guards?: Record<string, unknown> } {
  const g = spec.guards || {};
  const block = {
    ...(g.maxDestroy !== undefined ? { max_destroy: g.maxDestroy } : {}),
    ...(g.maxDestroyPercent !== undefined ? { max_destroy_percent: g.maxDestroyPercent } : {}),
    ...(g.neverEmpty !== undefined ? { never_empty: [...g.neverEmpty] } : {}),
    ...(spec.approval !== undefined ? { approval: spec.approval } : {}),
  };
  return Object.keys(block).length ? { guards: block } : {};
}

/** A task's status entry; `events_url` is empty while there are no events, as in CTS. */
export function taskStatus(v: TaskView, events: TaskEvent[], includeEvents: boolean, outputs?: OutputsRecord): CtsTaskStatus {
  const shaped = events.map((e) => eventToCts(e, v));
  const union = (pick: (e: TaskEvent) => string[]) => [...new Set(shaped.flatMap(pick))];
  return {
    task_name: v.name,
    status: v.status,
    enabled: v.enabled,
    providers: union((e) => e.config.providers ?? []),
    services: union((e) => e.config.services ?? []),
    events_url: events.length ? `/v1/status/tasks/${encodeURIComponent(v.name)}?include=events` : "",
    ...(includeEvents ? { events: shaped } : {}),
    ...(v.stale ? { stale: { since: v.stale.since, last_status: v.stale.lastStatus, reason: v.stale.reason } } : {}),
    ...(v.drift ? { drift: driftToCts(v)! } : {}),
    ...(v.held ? { held: heldToApi(v.held) } : {}),
    // Only with outputs: a task without any (every CTS module task) answers exactly CTS's shape.
    ...(outputs && Object.keys(outputs.outputs).length ? { outputs: outputsToApi(outputs) } : {}),
  };
}

/** Beyond CTS: a held plan as the API shows it (what it changes, why it waits, how to decide). */
export function heldToApi(h: HeldPlan): HeldPlanView {
  return {
    reasons: h.reasons,
    why: h.why,
    held_at: h.heldAt,
    ...(h.approvedAt ? { approved_at: h.approvedAt } : {}),
    changes: h.summary,
    resources: h.resources,
    approve: `POST /v1/tasks/${encodeURIComponent(h.task)}/approve`,
    reject: `POST /v1/tasks/${encodeURIComponent(h.task)}/reject`,
  };
}

/** A held plan in API answers. */
export interface HeldPlanView {
  reasons: string[];
  why: "guards" | "always";
  held_at: string;
  approved_at?: string;
  changes: { add: number; change: number; destroy: number };
  resources: Array<{ address: string; action: string }>;
  approve: string;
  reject: string;
}

/** An event with CTS's full `config` (`providers`, `services`, `source`); our `outcome`/`changes` stay beside. */
export function eventToCts(e: TaskEvent, v: TaskView): TaskEvent {
  const source = e.config.source ?? (typeof v.module === "string" ? v.module : classModuleLabel(v.className));
  return { ...e, config: { ...e.config, providers: e.config.providers ?? [], services: e.config.services ?? [], source } };
}

/** `GET /v1/status`'s summary. */
export function overallStatus(
  views: TaskView[],
  consul?: { reachable: boolean; lostSince?: string | undefined; reason?: string | undefined },
): { task_summary: { status: Record<TaskStatus, number>; enabled: { true: number; false: number } }; consul?: { reachable: boolean; since?: string; reason?: string } } {
  const status: Record<TaskStatus, number> = { successful: 0, errored: 0, critical: 0, unknown: 0 };
  const enabled = { true: 0, false: 0 };
  for (const v of views) {
    status[v.status]++;
    if (v.enabled) enabled.true++;
    else enabled.false++;
  }
  // Beyond CTS: whether Consul answers (every task's status is "unknown" while it does not).
  const c = consul ? { consul: { reachable: consul.reachable, ...(consul.lostSince ? { since: consul.lostSince } : {}), ...(consul.reason ? { reason: consul.reason } : {}) } } : {};
  return { task_summary: { status, enabled }, ...c };
}
