import type { ModuleTaskSpec } from "../synth/task-ref.ts";
import { catalogServices, consulKv, schedule, services, type Condition, type TaskInputs } from "../task/conditions.ts";
import { ModuleTask } from "../task/module-task.ts";
import { taskProblems } from "../task/validate.ts";
import type { BufferPeriodOption } from "../task/task.ts";
import { CREATE_SHAPE, foldKeys } from "./cts-decode.ts";
import { ApiError } from "./http-io.ts";
import { isObject, problemsOf, show } from "./schema-messages.ts";
import { ctsTaskSchema, decodeCtsJson, type CtsBufferPeriodJson, type CtsConditionJson, type CtsConsulKvJson, type CtsServicesJson, type CtsTaskJson } from "./task-schema.ts";

/**
 * Parses `POST /v1/tasks`'s body (`{"task":{...}}`) into a module task spec; 400 listing every
 * problem. Keys may be in any case; `variables` must already be decoded (decodeCreateRequest does
 * that, async, at the request boundary, so values are never decoded twice).
 */
export function parseCreateBody(raw: unknown): ModuleTaskSpec {
  const body = foldKeys(raw, CREATE_SHAPE, "");
  // The envelope's mistakes get whole-request hints (wrap the task), not field problems.
  if (!isObject(body)) throw new ApiError(400, `the request body must be a JSON object like {"task":{...}} (got ${show(body)}).`);
  const extra = Object.keys(body).filter((k) => k !== "task");
  if (body.task === undefined && ("name" in body || "module" in body)) throw new ApiError(400, `wrap the task in an object: {"task":{"name":...,"module":...}}.`);
  if (extra.length) throw new ApiError(400, `the request body has unsupported keys: ${extra.join(", ")}. Send {"task":{...}}.`);
  return parseTask(body.task);
}

/** Parses a task in CTS's API shape into a module task spec; 400 listing every problem. */
export function parseTask(task: unknown, at = "task"): ModuleTaskSpec {
  const parsed = ctsTaskSchema.safeParse(decodeCtsJson(task));
  if (!parsed.success) throw invalid(problemsOf(parsed.error.issues, at));
  const spec = specOf(parsed.data);
  // The runtime's own checks (cron syntax, regexps, buffer with schedule…), with API field names.
  const problems = taskProblems(new ModuleTask(spec)).map((p) => `${at}.${apiField(p.field)} ${p.message}`);
  if (problems.length) throw invalid(problems);
  return spec;
}

const invalid = (problems: string[]) => new ApiError(400, `invalid task: ${problems.join(" ")}`);

function apiField(field: string): string {
  return field.replace(/^bufferPeriod/, "buffer_period").replace(/^inputs\.kv/, "module_input.consul_kv").replace(/^inputs\./, "module_input.");
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
  };
}

function conditionOf(c: CtsConditionJson): Condition {
  if (c.services) return services(servicesQuery(c.services));
  const catalog = c.catalog_services ?? c["catalog-services"];
  if (catalog) {
    const { regexp, datacenter, namespace, node_meta: nodeMeta } = catalog;
    return catalogServices({ regexp, ...nonEmpty({ datacenter, namespace }), ...(nodeMeta && Object.keys(nodeMeta).length ? { nodeMeta } : {}) });
  }
  const kv = c.consul_kv ?? c["consul-kv"];
  if (kv) return consulKv(kvQuery(kv));
  if (c.schedule) return schedule({ cron: c.schedule.cron });
  throw new Error("unreachable: the condition schema requires exactly one block");
}

function inputsOf(m: CtsTaskJson["module_input"]): TaskInputs {
  const kv = m?.consul_kv ?? m?.["consul-kv"];
  return { ...(m?.services ? { services: services(servicesQuery(m.services)) } : {}), ...(kv ? { kv: consulKv(kvQuery(kv)) } : {}) };
}

function servicesQuery(o: CtsServicesJson) {
  const { names, regexp, datacenter, namespace, filter, cts_user_defined_meta: userMeta } = o;
  return {
    ...(names?.length ? { names } : { regexp: regexp ?? "" }),
    ...nonEmpty({ datacenter, namespace, filter }),
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
