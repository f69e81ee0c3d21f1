import { parseDuration } from "../config/duration.ts";
import type { ModuleTaskSpec } from "../synth/task-ref.ts";
import { catalogServices, consulKv, schedule, services, type Condition, type TaskInputs } from "../task/conditions.ts";
import { ModuleTask } from "../task/module-task.ts";
import { taskNameProblem, taskProblems } from "../task/validate.ts";
import type { BufferPeriodOption } from "../task/task.ts";
import { ApiError } from "./http-io.ts";

type Json = Record<string, unknown>;

const TASK_FIELDS = ["name", "description", "enabled", "module", "version", "variables", "providers", "condition", "module_input", "buffer_period", "origin"];
/** Names a module block reserves for itself or that cts fills from Consul data. */
const RESERVED_VARIABLES = new Set(["source", "version", "count", "for_each", "providers", "depends_on", "services", "catalog_services", "consul_kv"]);
const UNSUPPORTED: Record<string, string> = {
  variable_files: "is not supported through the API. Put the values in task.variables.",
  terraform_version: "is a Terraform Cloud (Enterprise) setting that cts does not have. Remove it.",
  services: "is CTS's deprecated task field. Use task.condition.services.names.",
  source: "was renamed to module in CTS 0.5. Use task.module.",
  source_input: "was renamed to module_input in CTS 0.5. Use task.module_input.",
};

/** Whether a JSON value is an object (not null, not a list). */
export const isObject = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);
/** A short description of a JSON value for messages. */
export const show = (v: unknown) => (v === null ? "null" : Array.isArray(v) ? "a list" : typeof v === "object" ? "an object" : JSON.stringify(v)?.slice(0, 40) ?? String(v));

/** Collects field-level problems ("task.condition.services.names must be a non-empty list of strings"). */
class Problems {
  readonly list: string[] = [];
  add(at: string, message: string): void {
    this.list.push(`${at} ${message}`);
  }
  str(o: Json, key: string, at: string, opts: { required?: boolean; nonEmpty?: boolean } = {}): string | undefined {
    const v = o[key];
    if (v === undefined) {
      if (opts.required) this.add(`${at}.${key}`, "is required.");
      return undefined;
    }
    if (typeof v !== "string") return this.add(`${at}.${key}`, `must be a string (got ${show(v)}).`), undefined;
    if (opts.nonEmpty && v.trim() === "") return this.add(`${at}.${key}`, "must not be empty."), undefined;
    return v;
  }
  bool(o: Json, key: string, at: string): boolean | undefined {
    const v = o[key];
    if (v === undefined) return undefined;
    if (typeof v !== "boolean") return this.add(`${at}.${key}`, `must be true or false (got ${show(v)}).`), undefined;
    return v;
  }
  strMap(o: Json, key: string, at: string): Record<string, string> | undefined {
    const v = o[key];
    if (v === undefined) return undefined;
    if (!isObject(v) || Object.values(v).some((x) => typeof x !== "string")) return this.add(`${at}.${key}`, "must be an object of string values."), undefined;
    return v as Record<string, string>;
  }
  known(o: Json, at: string, fields: readonly string[]): void {
    for (const k of Object.keys(o)) if (!fields.includes(k)) this.add(`${at}.${k}`, `is not a known field. Use: ${fields.join(", ")}.`);
  }
  throwIfAny(prefix = "invalid task"): void {
    if (this.list.length) throw new ApiError(400, `${prefix}: ${this.list.join(" ")}`);
  }
}

/** Parses `POST /v1/tasks`'s body (`{"task":{...}}`) into a module task spec; 400 listing every problem. */
export function parseCreateBody(body: unknown): ModuleTaskSpec {
  if (!isObject(body)) throw new ApiError(400, `the request body must be a JSON object like {"task":{...}} (got ${show(body)}).`);
  const extra = Object.keys(body).filter((k) => k !== "task");
  if (body.task === undefined && ("name" in body || "module" in body)) throw new ApiError(400, `wrap the task in an object: {"task":{"name":...,"module":...}}.`);
  if (extra.length) throw new ApiError(400, `the request body has unsupported keys: ${extra.join(", ")}. Send {"task":{...}}.`);
  return parseTask(body.task);
}

/** Parses a task in CTS's API shape into a module task spec. */
export function parseTask(task: unknown, at = "task"): ModuleTaskSpec {
  const p = new Problems();
  if (!isObject(task)) throw new ApiError(400, `invalid task: ${at} must be an object (got ${show(task)}).`);
  for (const [k, why] of Object.entries(UNSUPPORTED)) if (task[k] !== undefined) p.add(`${at}.${k}`, why);
  p.known(Object.fromEntries(Object.entries(task).filter(([k]) => !(k in UNSUPPORTED))), at, TASK_FIELDS);
  const name = p.str(task, "name", at, { required: true });
  if (name !== undefined) {
    const problem = taskNameProblem(name);
    if (problem) p.add(`${at}.name`, problem);
  }
  const module = p.str(task, "module", at, { required: true, nonEmpty: true });
  const version = p.str(task, "version", at);
  const description = p.str(task, "description", at);
  const enabled = p.bool(task, "enabled", at);
  if (task.providers !== undefined) {
    if (!Array.isArray(task.providers) || task.providers.some((x) => typeof x !== "string")) p.add(`${at}.providers`, "must be a list of strings.");
    else if (task.providers.length)
      p.add(`${at}.providers`, "is not supported: cts has no terraform_provider blocks. Configure providers inside the module (or use a task class), and send providers: [] or leave it out.");
  }
  const variables = parseVariables(task.variables, `${at}.variables`, p);
  let condition: Condition | undefined;
  if (task.condition === undefined) p.add(`${at}.condition`, "is required. Use one of services, catalog_services, consul_kv or schedule.");
  else condition = parseCondition(task.condition, `${at}.condition`, p);
  const inputs = task.module_input === undefined ? {} : parseInputs(task.module_input, `${at}.module_input`, condition, p);
  const bufferPeriod = task.buffer_period === undefined ? undefined : parseBuffer(task.buffer_period, `${at}.buffer_period`, p);
  p.throwIfAny();
  const spec: ModuleTaskSpec = {
    name: name!,
    module: module!,
    condition: condition!,
    ...(description !== undefined ? { description } : {}),
    ...(enabled !== undefined ? { enabled } : {}),
    ...(version ? { version } : {}),
    ...(variables ? { variables } : {}),
    ...(Object.keys(inputs).length ? { inputs } : {}),
    ...(bufferPeriod !== undefined ? { bufferPeriod } : {}),
  };
  // The runtime's own checks (cron syntax, regexps, buffer with schedule…), with API field names.
  for (const prob of taskProblems(new ModuleTask(spec))) p.add(`${at}.${apiField(prob.field)}`, prob.message);
  p.throwIfAny();
  return spec;
}

function apiField(field: string): string {
  return field.replace(/^bufferPeriod/, "buffer_period").replace(/^inputs\.kv/, "module_input.consul_kv").replace(/^inputs\./, "module_input.");
}

function parseVariables(v: unknown, at: string, p: Problems): Record<string, unknown> | undefined {
  if (v === undefined) return undefined;
  if (!isObject(v)) return p.add(at, `must be an object of variable names to values (got ${show(v)}).`), undefined;
  for (const [k, val] of Object.entries(v)) {
    if (!/^[A-Za-z_][A-Za-z0-9_-]*$/.test(k)) p.add(`${at}.${k.slice(0, 60)}`, "is not a valid Terraform variable name (letters, digits, '_' and '-', not starting with a digit).");
    else if (RESERVED_VARIABLES.has(k)) p.add(`${at}.${k}`, "is reserved (a module meta-argument, or data cts passes from Consul). Rename the variable in the module.");
    if (val === null) p.add(`${at}.${k}`, "is null. Give a value or leave the variable out.");
  }
  return v;
}

const CONDITION_KEYS: Record<string, Condition["kind"]> = {
  services: "services",
  catalog_services: "catalog-services",
  "catalog-services": "catalog-services",
  consul_kv: "consul-kv",
  "consul-kv": "consul-kv",
  schedule: "schedule",
};

function parseCondition(c: unknown, at: string, p: Problems): Condition | undefined {
  if (!isObject(c)) return p.add(at, `must be an object with one of services, catalog_services, consul_kv or schedule (got ${show(c)}).`), undefined;
  const keys = Object.keys(c);
  const unknown = keys.filter((k) => !(k in CONDITION_KEYS));
  if (unknown.length) return p.add(`${at}.${unknown[0]!.slice(0, 60)}`, "is not a condition. Use services, catalog_services, consul_kv or schedule."), undefined;
  if (keys.length !== 1) return p.add(at, `must have exactly one condition (got ${keys.length ? keys.join(", ") : "none"}).`), undefined;
  const key = keys[0]!;
  const o = c[key];
  const here = `${at}.${key}`;
  if (!isObject(o)) return p.add(here, `must be an object (got ${show(o)}).`), undefined;
  const kind = CONDITION_KEYS[key]!;
  if (kind !== "schedule" && o.use_as_module_input === false)
    p.add(`${here}.use_as_module_input`, "false is not supported: module tasks always pass the condition's data to the module. Leave it out or set true.");
  else p.bool(o, "use_as_module_input", here);
  switch (kind) {
    case "services": {
      p.known(o, here, ["names", "regexp", "datacenter", "namespace", "filter", "cts_user_defined_meta", "use_as_module_input"]);
      const q = servicesQuery(o, here, p);
      return q && services(q);
    }
    case "catalog-services": {
      p.known(o, here, ["regexp", "datacenter", "namespace", "node_meta", "use_as_module_input"]);
      const regexp = p.str(o, "regexp", here, { required: true });
      if (regexp !== undefined) regexpCheck(regexp, `${here}.regexp`, p);
      const datacenter = p.str(o, "datacenter", here);
      const namespace = p.str(o, "namespace", here);
      const nodeMeta = p.strMap(o, "node_meta", here);
      return catalogServices({ regexp: regexp ?? "", ...nonEmpty({ datacenter, namespace }), ...(nodeMeta && Object.keys(nodeMeta).length ? { nodeMeta } : {}) });
    }
    case "consul-kv": {
      p.known(o, here, ["path", "recurse", "datacenter", "namespace", "use_as_module_input"]);
      const q = kvQuery(o, here, p);
      return q && consulKv(q);
    }
    case "schedule": {
      p.known(o, here, ["cron"]);
      const cron = p.str(o, "cron", here, { required: true, nonEmpty: true });
      return cron === undefined ? undefined : schedule({ cron });
    }
  }
}

function parseInputs(v: unknown, at: string, condition: Condition | undefined, p: Problems): TaskInputs {
  if (!isObject(v)) return p.add(at, `must be an object with services and/or consul_kv (got ${show(v)}).`), {};
  const inputs: { services?: ReturnType<typeof services>; kv?: ReturnType<typeof consulKv> } = {};
  for (const [key, o] of Object.entries(v)) {
    const here = `${at}.${key}`;
    const kind = key === "services" ? "services" : key === "consul_kv" || key === "consul-kv" ? "consul-kv" : undefined;
    if (!kind) {
      p.add(here, "is not a module input. Use services or consul_kv.");
      continue;
    }
    if (!isObject(o)) {
      p.add(here, `must be an object (got ${show(o)}).`);
      continue;
    }
    if (condition?.kind === kind) {
      p.add(here, `repeats the condition's type (${key}). Put it in the condition, or drop the module input.`);
      continue;
    }
    if (kind === "services") {
      p.known(o, here, ["names", "regexp", "datacenter", "namespace", "filter", "cts_user_defined_meta"]);
      const q = servicesQuery(o, here, p);
      if (q) inputs.services = services(q);
    } else {
      p.known(o, here, ["path", "recurse", "datacenter", "namespace"]);
      const q = kvQuery(o, here, p);
      if (q) inputs.kv = consulKv(q);
    }
  }
  return inputs;
}

function servicesQuery(o: Json, at: string, p: Problems) {
  const hasNames = o.names !== undefined && !(Array.isArray(o.names) && o.names.length === 0 && o.regexp !== undefined);
  let names: string[] | undefined;
  if (hasNames) {
    if (!Array.isArray(o.names) || o.names.length === 0 || o.names.some((n) => typeof n !== "string" || n.trim() === ""))
      p.add(`${at}.names`, "must be a non-empty list of strings.");
    else names = o.names as string[];
  }
  const regexp = p.str(o, "regexp", at);
  if (hasNames && regexp !== undefined) p.add(at, "sets both names and regexp. Use one of them.");
  else if (!hasNames && regexp === undefined && o.regexp === undefined) p.add(`${at}.names`, "must be a non-empty list of strings (or set regexp).");
  if (regexp !== undefined) regexpCheck(regexp, `${at}.regexp`, p);
  const datacenter = p.str(o, "datacenter", at);
  const namespace = p.str(o, "namespace", at);
  const filter = p.str(o, "filter", at);
  const userMeta = p.strMap(o, "cts_user_defined_meta", at);
  if (!names && regexp === undefined) return undefined;
  return {
    ...(names ? { names } : { regexp: regexp! }),
    ...nonEmpty({ datacenter, namespace, filter }),
    ...(userMeta && Object.keys(userMeta).length ? { userMeta } : {}),
  };
}

function kvQuery(o: Json, at: string, p: Problems) {
  const path = p.str(o, "path", at, { required: true, nonEmpty: true });
  const recurse = p.bool(o, "recurse", at);
  const datacenter = p.str(o, "datacenter", at);
  const namespace = p.str(o, "namespace", at);
  return path === undefined ? undefined : { path, ...(recurse !== undefined ? { recurse } : {}), ...nonEmpty({ datacenter, namespace }) };
}

function parseBuffer(v: unknown, at: string, p: Problems): BufferPeriodOption | false | undefined {
  if (!isObject(v)) return p.add(at, `must be an object like {"enabled":true,"min":"5s","max":"20s"} (got ${show(v)}).`), undefined;
  p.known(v, at, ["enabled", "min", "max"]);
  const enabled = p.bool(v, "enabled", at);
  const out: BufferPeriodOption = {};
  for (const key of ["min", "max"] as const) {
    const d = p.str(v, key, at);
    if (d === undefined) continue;
    if (parseDuration(d) === undefined) p.add(`${at}.${key}`, `'${d.slice(0, 40)}' is not a duration. Use e.g. "5s", "1m30s" or "500ms".`);
    else out[key] = d;
  }
  if (enabled === false) return false;
  return out;
}

function regexpCheck(re: string, at: string, p: Problems): void {
  try {
    new RegExp(re);
  } catch (e) {
    p.add(at, `is not a valid regular expression: ${(e as Error).message}.`);
  }
}

function nonEmpty<T extends Record<string, string | undefined>>(o: T): Partial<Record<keyof T, string>> {
  const out: Partial<Record<keyof T, string>> = {};
  for (const [k, v] of Object.entries(o)) if (v) out[k as keyof T] = v;
  return out;
}
