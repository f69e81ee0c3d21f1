import type { ModuleTaskSpec } from "../synth/task-ref.ts";
import { catalogServices, configEntries, consulKv, intentions, nodes, schedule, services, type Condition, type TaskInputs } from "../task/conditions.ts";
import type { ServicesTrigger } from "../task/service-trigger.ts";
import { ModuleTask } from "../task/module-task.ts";
import { taskProblems } from "../task/validate.ts";
import type { BufferPeriodOption, TerraformCloudWorkspaceOption } from "../task/task.ts";
import { terraformCloudWorkspaceProblems } from "../config/terraform-cloud.ts";
import { TFC_TERRAFORM_CONSTRAINT } from "../tfc/supported-versions.ts";
import { CREATE_SHAPE, foldKeys } from "../cts/api/decode.ts";
import { ApiError } from "./http-error.ts";
import { isObject, problemsOf, show } from "./schema-messages.ts";
import type { ApprovalMode, PlanGuards } from "../task/guards.ts";
import { ctsTaskSchema, decodeCtsJson, type CtsGuardsJson, type CtsBufferPeriodJson, type CtsConditionJson, type CtsConsulKvJson, type CtsServicesJson, type CtsNodesJson, type CtsIntentionsJson, type CtsConfigEntriesJson, type CtsTaskJson } from "./task-schema.ts";

/** What parsing a task depends on: the daemon's driver decides whether Terraform Cloud settings are allowed. */
export interface TaskParseOptions {
  /** "terraformCloud" accepts `terraform_cloud_workspace` and `terraform_version`; the local driver (default) refuses them, as CTS (OSS) does. */
  driver?: "terraform" | "terraformCloud";
}

/**
 * Parses `POST /v1/tasks`'s body (`{"task":{...}}`) into a module task spec; 400 listing every
 * problem. Keys may be in any case; `variables` must already be decoded (decodeCreateRequest does
 * that, async, at the request boundary, so values are never decoded twice).
 */
export function parseCreateBody(raw: unknown, opts: TaskParseOptions = {}): ModuleTaskSpec {
  const body = foldKeys(raw, CREATE_SHAPE, "");
  // The envelope's mistakes get whole-request hints (wrap the task), not field problems.
  if (!isObject(body)) throw new ApiError(400, `the request body must be a JSON object like {"task":{...}} (got ${show(body)}).`);
  const extra = Object.keys(body).filter((k) => k !== "task");
  if (body.task === undefined && ("name" in body || "module" in body)) throw new ApiError(400, `wrap the task in an object: {"task":{"name":...,"module":...}}.`);
  if (extra.length) throw new ApiError(400, `the request body has unsupported keys: ${extra.join(", ")}. Send {"task":{...}}.`);
  return parseTask(body.task, "task", opts);
}

/** Parses a task in CTS's API shape into a module task spec; 400 listing every problem. */
export function parseTask(task: unknown, at = "task", opts: TaskParseOptions = {}): ModuleTaskSpec {
  const parsed = ctsTaskSchema.safeParse(decodeCtsJson(task));
  if (!parsed.success) throw invalid(problemsOf(parsed.error.issues, at));
  const workspace = workspaceOf(parsed.data, at, opts.driver ?? "terraform");
  const spec = { ...specOf(parsed.data), ...(workspace ? { terraformCloudWorkspace: workspace } : {}) };
  // The runtime's own checks (cron syntax, regexps, buffer with schedule…), with API field names.
  const problems = taskProblems(new ModuleTask(spec)).map((p) => `${at}.${apiField(p.field)} ${p.message.replace("after: [", '"cts_after": [')}`);
  if (problems.length) throw invalid(problems);
  return spec;
}

const WORKSPACE_KEYS = { executionMode: "execution_mode", agentPoolId: "agent_pool_id", agentPoolName: "agent_pool_name", terraformVersion: "terraform_version" } as const;
const WORKSPACE_FIXES: Record<string, string> = {
  execution_mode: ' Set "execution_mode" to "remote" or "agent" (with agent_pool_id or agent_pool_name).',
  agent_pool_id: ' Set "execution_mode": "agent", or remove the agent pool.',
  agent_pool_name: ' Set "execution_mode": "agent", or remove the agent pool.',
  terraform_version: ` Send an exact version x.y.z within ${TFC_TERRAFORM_CONSTRAINT}.`,
};

/**
 * The task's `terraform_cloud_workspace` and deprecated `terraform_version` (the block's version
 * wins; `""` is unset, as in CTS), checked with the config's shared rules and CTS's messages.
 * Under the local driver a non-empty setting is refused: it would silently do nothing there.
 */
function workspaceOf(t: CtsTaskJson, at: string, driver: "terraform" | "terraformCloud"): TerraformCloudWorkspaceOption | undefined {
  const block: Record<string, string> = {};
  for (const [field, key] of Object.entries(WORKSPACE_KEYS)) {
    const v = t.terraform_cloud_workspace?.[key];
    if (v) block[field] = v;
  }
  const taskVersion = t.terraform_version || undefined;
  if (driver !== "terraformCloud") {
    const problems: string[] = [];
    if (taskVersion) problems.push(`${at}.terraform_version is only valid with the Terraform Cloud driver (as in CTS). Remove it, or configure driver.terraformCloud in the daemon's config.`);
    if (Object.keys(block).length) problems.push(`${at}.terraform_cloud_workspace is only valid with the Terraform Cloud driver (as in CTS). Remove it, or configure driver.terraformCloud in the daemon's config.`);
    if (problems.length) throw invalid(problems);
    return undefined;
  }
  const field = `${at}.terraform_cloud_workspace`;
  const problems = terraformCloudWorkspaceProblems(block as TerraformCloudWorkspaceOption, field, taskVersion ? { version: taskVersion, field: `${at}.terraform_version` } : undefined);
  if (problems.length)
    throw invalid(
      problems.map((p) => {
        const camel = p.field.startsWith(`${field}.`) ? (p.field.slice(field.length + 1) as keyof typeof WORKSPACE_KEYS) : undefined;
        const key = camel ? WORKSPACE_KEYS[camel] : "terraform_version";
        const fix = /is required/.test(p.message) ? ' Add "agent_pool_id" or "agent_pool_name", or use "execution_mode": "remote".' : WORKSPACE_FIXES[key];
        return `${camel ? `${field}.${key}` : p.field}: ${p.message}.${fix}`;
      }),
    );
  const version = block.terraformVersion || taskVersion;
  const out = { ...block, ...(version ? { terraformVersion: version } : {}) } as TerraformCloudWorkspaceOption;
  return Object.keys(out).length ? out : undefined;
}

const invalid = (problems: string[]) => new ApiError(400, `invalid task: ${problems.join(" ")}`);

function apiField(field: string): string {
  return field
    .replace(/^guards\.maxDestroyPercent/, "guards.max_destroy_percent")
    .replace(/^guards\.maxDestroy/, "guards.max_destroy")
    .replace(/^guards\.neverEmpty/, "guards.never_empty")
    .replace(/^approval$/, "guards.approval")
    .replace(/^condition\.trigger/, "condition.services.cts_trigger")
    .replace(/^after\b/, "cts_after")
    .replace(/^allowEmpty$/, "cts_allow_empty").replace(/^outputs/, "cts_outputs").replace(/^sensitiveOutputs/, "cts_sensitive_outputs").replace(/^bufferPeriod/, "buffer_period").replace(/^inputs\.kv/, "module_input.consul_kv").replace(/^inputs\.configEntries/, "module_input.config_entries").replace(/^inputs\./, "module_input.")
    .replace(/\.samenessGroup$/, ".sameness_group").replace(/\.nodeMeta$/, ".node_meta");
}

/** A valid CTS task as the module task spec the runtime runs. */
function specOf(t: CtsTaskJson): ModuleTaskSpec {
  const inputs = inputsOf(t.module_input);
  const bufferPeriod = t.buffer_period && bufferOf(t.buffer_period);
  return {
    name: t.name,
    module: t.module,
    condition: conditionOf(t.condition),
    ...(t.description !== undefined ? { description: t.description } : {}),
    ...(t.enabled !== undefined ? { enabled: t.enabled } : {}),
    ...(t.version ? { version: t.version } : {}),
    ...(t.variables ? { variables: t.variables } : {}),
    ...(Object.keys(inputs).length ? { inputs } : {}),
    ...(bufferPeriod !== undefined ? { bufferPeriod } : {}),
    ...guardsOf(t.guards),
    ...(t.cts_allow_empty !== undefined ? { allowEmpty: t.cts_allow_empty } : {}),
    ...(t.cts_outputs !== undefined ? { outputs: t.cts_outputs } : {}),
    ...(t.cts_sensitive_outputs !== undefined ? { sensitiveOutputs: t.cts_sensitive_outputs } : {}),
    // Checked by taskProblems (a list of other task names); an empty list is no chain.
    ...(t.cts_after !== undefined && !(Array.isArray(t.cts_after) && t.cts_after.length === 0) ? { after: t.cts_after as string[] } : {}),
  };
}

/** The `guards` block as the task's guards and approval (as the CTS HCL block maps). */
function guardsOf(g: CtsGuardsJson | undefined): { guards?: PlanGuards; approval?: ApprovalMode } {
  if (!g) return {};
  const guards: PlanGuards = {
    ...(g.max_destroy !== undefined ? { maxDestroy: g.max_destroy } : {}),
    ...(g.max_destroy_percent !== undefined ? { maxDestroyPercent: g.max_destroy_percent } : {}),
    ...(g.never_empty !== undefined ? { neverEmpty: g.never_empty } : {}),
  };
  return { ...(Object.keys(guards).length ? { guards } : {}), ...(g.approval !== undefined ? { approval: g.approval as ApprovalMode } : {}) };
}

function conditionOf(c: CtsConditionJson): Condition {
  if (c.services) return services({ ...servicesQuery(c.services), ...(c.services.cts_trigger !== undefined ? { trigger: c.services.cts_trigger as ServicesTrigger } : {}) });
  const catalog = c.catalog_services ?? c["catalog-services"];
  if (catalog) {
    const { regexp, datacenter, namespace, node_meta: nodeMeta } = catalog;
    return catalogServices({ regexp, ...nonEmpty({ datacenter, namespace }), ...(nodeMeta && Object.keys(nodeMeta).length ? { nodeMeta } : {}) });
  }
  const kv = c.consul_kv ?? c["consul-kv"];
  if (kv) return consulKv(kvQuery(kv));
  if (c.nodes) return nodes(nodesQuery(c.nodes));
  if (c.intentions) return intentions(intentionsQuery(c.intentions));
  const entries = c.config_entries ?? c["config-entries"];
  if (entries) return configEntries(configEntriesQuery(entries));
  if (c.schedule) return schedule({ cron: c.schedule.cron });
  throw new Error("unreachable: the condition schema requires exactly one block");
}

function inputsOf(m: CtsTaskJson["module_input"]): TaskInputs {
  const kv = m?.consul_kv ?? m?.["consul-kv"];
  const entries = m?.config_entries ?? m?.["config-entries"];
  return {
    ...(m?.services ? { services: services(servicesQuery(m.services)) } : {}),
    ...(kv ? { kv: consulKv(kvQuery(kv)) } : {}),
    ...(m?.nodes ? { nodes: nodes(nodesQuery(m.nodes)) } : {}),
    ...(m?.intentions ? { intentions: intentions(intentionsQuery(m.intentions)) } : {}),
    ...(entries ? { configEntries: configEntries(configEntriesQuery(entries)) } : {}),
  };
}

function nodesQuery(o: CtsNodesJson) {
  return { ...nonEmpty({ datacenter: o.datacenter, partition: o.partition, filter: o.filter }), ...(o.node_meta && Object.keys(o.node_meta).length ? { nodeMeta: o.node_meta } : {}) };
}

function intentionsQuery(o: CtsIntentionsJson) {
  return nonEmpty({ destination: o.destination, datacenter: o.datacenter, namespace: o.namespace, partition: o.partition });
}

function configEntriesQuery(o: CtsConfigEntriesJson) {
  return { kind: o.kind, ...nonEmpty({ name: o.name, datacenter: o.datacenter, namespace: o.namespace, partition: o.partition }) };
}

function servicesQuery(o: CtsServicesJson) {
  const { names, regexp, datacenter, namespace, filter, cts_user_defined_meta: userMeta, peer, partition, sameness_group: samenessGroup } = o;
  return {
    ...(names?.length ? { names } : { regexp: regexp ?? "" }),
    ...nonEmpty({ datacenter, namespace, filter, peer, partition, samenessGroup }),
    ...(userMeta && Object.keys(userMeta).length ? { userMeta } : {}),
  };
}

function kvQuery(o: CtsConsulKvJson) {
  return { path: o.path, ...(o.recurse !== undefined ? { recurse: o.recurse } : {}), ...nonEmpty({ datacenter: o.datacenter, namespace: o.namespace }) };
}

function bufferOf(b: CtsBufferPeriodJson): BufferPeriodOption | false {
  if (b.enabled === false) return false;
  return { ...(b.min !== undefined ? { min: b.min } : {}), ...(b.max !== undefined ? { max: b.max } : {}) };
}

function nonEmpty<T extends Record<string, string | undefined>>(o: T): Partial<Record<keyof T, string>> {
  const out: Partial<Record<keyof T, string>> = {};
  for (const [k, v] of Object.entries(o)) if (v) out[k as keyof T] = v;
  return out;
}
