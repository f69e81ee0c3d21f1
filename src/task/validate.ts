import { MAX_DATA_DEPTH, tooDeepAt } from "../values/data-depth.ts";
import { approvalProblems, guardProblems } from "./guards.ts";
import type { Problem } from "../errors/problems.ts";
import { parseCron } from "./cron.ts";
import { parseDuration } from "../time/duration.ts";
import type { Condition, TaskInputs } from "./conditions.ts";
import type { Task } from "./task.ts";
import { SECRET_NAME } from "./secrets.ts";
import { isTemplateValue } from "./provider-templates.ts";
import { CONFIG_ENTRY_KIND } from "../consul/query.ts";
import { triggerProblems } from "./service-trigger.ts";
import { moduleOutputProblems } from "./module-outputs.ts";
import { afterProblems } from "./chains.ts";

/** CTS's rule for task names; it also keeps every path derived from a name inside the working dir. */
export const TASK_NAME = /^[A-Za-z_][A-Za-z0-9_-]{0,127}$/;

/** Checks a task name; returns a message with the fix, or undefined when valid. */
export function taskNameProblem(name: unknown): string | undefined {
  if (typeof name !== "string" || name === "") return "is empty. Give the task a name of letters, digits, '_' and '-', starting with a letter or '_'.";
  if (!TASK_NAME.test(name))
    return `'${name.slice(0, 60)}' is not a valid task name. Use letters, digits, '_' and '-', start with a letter or '_', at most 128 characters.`;
  return undefined;
}

/** Every problem with one task's declaration (fields relative to the task). */
export function taskProblems(task: Task<Condition, TaskInputs>): Problem[] {
  const problems: Problem[] = [];
  const nameProblem = taskNameProblem(task.name);
  if (nameProblem) problems.push({ field: "name", message: nameProblem });
  problems.push(...conditionProblems(task.condition, "condition"));
  const inputs = (task.inputs ?? {}) as TaskInputs;
  for (const [key, input] of Object.entries(inputs)) {
    if (input === undefined) continue;
    const made = INPUT_KINDS[key];
    if (!made) {
      problems.push({ field: `inputs.${key}`, message: `is not a known input. Use ${Object.keys(INPUT_KINDS).map((k) => `inputs.${k}`).join(", ")}.` });
      continue;
    }
    const [expected, factory] = made;
    if (input.kind !== expected) problems.push({ field: `inputs.${key}`, message: `must be made with ${factory}.` });
    else if (task.condition?.kind === expected)
      problems.push({ field: `inputs.${key}`, message: `repeats the condition's type (${expected}). Put the data in the condition, or drop the input.` });
    else {
      problems.push(...conditionProblems(input, `inputs.${key}`));
      // An input refreshes data at each run and never starts one: a trigger there would do nothing.
      if (input.kind === "services" && input.trigger !== undefined)
        problems.push({ field: `inputs.${key}.trigger`, message: "is set on an input, which never runs the task. Remove it, or make these services the task's condition." });
    }
  }
  if (task.bufferPeriod) problems.push(...bufferProblems(task.bufferPeriod, "bufferPeriod"));
  problems.push(...afterProblems(task.name, task.after));
  if (task.allowEmpty !== undefined && typeof task.allowEmpty !== "boolean") problems.push({ field: "allowEmpty", message: "must be true or false." });
  if (task.driftCheck !== undefined) problems.push(...driftCheckProblems(task.driftCheck, "driftCheck"));
  problems.push(...guardProblems(task.guards, "guards"), ...approvalProblems(task.approval, "approval"));
  for (const [name, source] of Object.entries(task.secrets ?? {})) {
    if (!SECRET_NAME.test(name)) problems.push({ field: `secrets.${name}`, message: "is not a valid Terraform variable name. Use letters, digits and '_'." });
    const ok =
      source && typeof source === "object" && (typeof (source as { env?: unknown }).env === "string" || typeof (source as { file?: unknown }).file === "string" || isTemplateValue(source));
    if (!ok) problems.push({ field: `secrets.${name}`, message: 'must be { env: "VAR" }, { file: "/path" } or vaultSecret("path", "key").' });
  }
  if (task.bufferPeriod && task.condition?.kind === "schedule")
    problems.push({ field: "bufferPeriod", message: "is not used by schedule tasks (they run on their cron). Remove it." });
  if (task.workingDir !== undefined && (typeof task.workingDir !== "string" || task.workingDir.trim() === "" || /[\0\n\r]/.test(task.workingDir)))
    problems.push({ field: "workingDir", message: `must be a folder path (got ${JSON.stringify(task.workingDir)?.slice(0, 60)}). Leave it out to work in <workingDir>/${task.name}.` });
  problems.push(...depthProblems(task), ...moduleOutputProblems(task));
  return problems;
}

/**
 * A module task's data (variables, provider settings) nests at most MAX_DATA_DEPTH levels: it is
 * JSON-encoded into answers, stored state and the root module, and deeper data would overflow the stack.
 */
function depthProblems(task: object): Problem[] {
  const { module, variables, fileVariables, providers } = task as { module?: unknown; variables?: unknown; fileVariables?: unknown; providers?: unknown };
  if (typeof module !== "string") return [];
  const problems: Problem[] = [];
  const check = (value: unknown, field: string) => {
    const at = tooDeepAt(value, MAX_DATA_DEPTH, field);
    if (at !== undefined) problems.push({ field, message: `nests deeper than ${MAX_DATA_DEPTH} levels of objects and lists (at ${at}). Flatten it, or pass it as a JSON string and jsondecode() it in the module.` });
  };
  check(variables, "variables");
  check(fileVariables, "variableFiles");
  if (Array.isArray(providers)) providers.forEach((p: { name?: unknown; config?: unknown }, i) => check(p?.config, `providers[${i}].config`));
  return problems;
}

/** Each input's condition kind and the function that makes it. */
const INPUT_KINDS: Record<string, [Condition["kind"], string]> = {
  services: ["services", "services()"],
  kv: ["consul-kv", "consulKv()"],
  nodes: ["nodes", "nodes()"],
  intentions: ["intentions", "intentions()"],
  configEntries: ["config-entries", "configEntries()"],
};

function conditionProblems(c: Condition | undefined, at: string): Problem[] {
  if (!c || typeof c !== "object" || !("kind" in c))
    return [{ field: at, message: "is missing. Use services(), catalogServices(), consulKv(), nodes(), intentions(), configEntries() or schedule()." }];
  const p: Problem[] = [];
  switch (c.kind) {
    case "services": {
      const q = c.query ?? {};
      p.push(...stringProblems(q, ["peer", "partition", "samenessGroup"], at));
      if (q.regexp !== undefined && (q.peer || q.samenessGroup))
        p.push({ field: `${at}.${q.peer ? "peer" : "samenessGroup"}`, message: "needs names, not a regexp: Consul lists no peer's or sameness group's service names. Name the services." });
      if (q.peer && q.samenessGroup) p.push({ field: `${at}.samenessGroup`, message: "and peer are both set. A sameness group already spans its peers: use one of them." });
      const hasNames = Array.isArray(q.names) && q.names.length > 0;
      if (q.names !== undefined && q.regexp !== undefined) p.push({ field: `${at}.names`, message: "and regexp are both set. Use one of them." });
      else if (!hasNames && q.regexp === undefined) p.push({ field: `${at}.names`, message: "is empty. Name at least one service or use a regexp." });
      if (q.names?.some((n) => typeof n !== "string" || n === "")) p.push({ field: `${at}.names`, message: "holds an empty or non-string name." });
      if (q.regexp !== undefined) p.push(...regexpProblems(q.regexp, `${at}.regexp`));
      if (at === "condition") p.push(...triggerProblems(c.trigger, `${at}.trigger`));
      if (q.each !== undefined && (!Array.isArray(q.each) || q.each.some((e) => typeof e?.name !== "string" || e.name === "" || !q.names?.includes(e.name))))
        p.push({ field: `${at}.each`, message: "must be a list of { name, datacenter?, namespace?, filter?, userMeta? } whose names are in names." });
      break;
    }
    case "catalog-services":
      p.push(...regexpProblems(c.query?.regexp ?? "", `${at}.regexp`));
      break;
    case "consul-kv":
      if (typeof c.query?.path !== "string" || c.query.path === "") p.push({ field: `${at}.path`, message: "is empty. Name the KV key (or prefix with recurse: true)." });
      break;
    case "nodes":
      p.push(...stringProblems(c.query, ["datacenter", "partition", "filter"], at), ...mapProblems(c.query?.nodeMeta, `${at}.nodeMeta`));
      break;
    case "intentions":
      p.push(...stringProblems(c.query, ["destination", "datacenter", "namespace", "partition"], at));
      break;
    case "config-entries":
      if (typeof c.query?.kind !== "string" || !CONFIG_ENTRY_KIND.test(c.query.kind))
        p.push({ field: `${at}.kind`, message: `${JSON.stringify(c.query?.kind)} is not a config entry kind. Use Consul's spelling, e.g. "service-defaults" or "service-intentions".` });
      p.push(...stringProblems(c.query, ["name", "datacenter", "namespace", "partition"], at));
      break;
    case "schedule":
      try {
        parseCron(c.cron);
      } catch (e) {
        p.push({ field: `${at}.cron`, message: `${(e as Error).message}.` });
      }
      break;
    default:
      p.push({ field: `${at}.kind`, message: `'${(c as { kind: string }).kind}' is not a condition. Use services(), catalogServices(), consulKv(), nodes(), intentions(), configEntries() or schedule().` });
  }
  return p;
}

/** Each of `keys` that is set must be a non-empty string. */
function stringProblems(q: object | undefined, keys: string[], at: string): Problem[] {
  const out: Problem[] = [];
  for (const k of keys) {
    const v = (q as Record<string, unknown> | undefined)?.[k];
    if (v !== undefined && (typeof v !== "string" || v === "")) out.push({ field: `${at}.${k}`, message: "must be a non-empty string (leave it out for the default)." });
  }
  return out;
}

/** A map of string values, or absent. */
function mapProblems(m: unknown, field: string): Problem[] {
  if (m === undefined) return [];
  if (!m || typeof m !== "object" || Array.isArray(m) || Object.values(m).some((v) => typeof v !== "string")) return [{ field, message: 'must be an object of strings, e.g. { role: "edge" }.' }];
  return [];
}

function regexpProblems(re: unknown, field: string): Problem[] {
  if (typeof re !== "string") return [{ field, message: "must be a string." }];
  try {
    new RegExp(re);
    return [];
  } catch (e) {
    return [{ field, message: `is not a valid regular expression: ${(e as Error).message}.` }];
  }
}

/** Problems with a buffer period option. */
export function bufferProblems(bp: { min?: string | number; max?: string | number }, at: string): Problem[] {
  const p: Problem[] = [];
  const min = bp.min === undefined ? undefined : parseDuration(bp.min);
  const max = bp.max === undefined ? undefined : parseDuration(bp.max);
  if (bp.min !== undefined && min === undefined) p.push({ field: `${at}.min`, message: `'${bp.min}' is not a duration. Use e.g. "5s" or a number of ms.` });
  if (bp.max !== undefined && max === undefined) p.push({ field: `${at}.max`, message: `'${bp.max}' is not a duration. Use e.g. "20s" or a number of ms.` });
  if (min !== undefined && max !== undefined && min > max) p.push({ field: `${at}.min`, message: `(${bp.min}) is greater than max (${bp.max}). Make min <= max.` });
  return p;
}

/** Problems of a drift check option (`{ every: "30m", correct?: boolean }` or false). */
export function driftCheckProblems(dc: unknown, at: string): Problem[] {
  if (dc === false) return [];
  if (!dc || typeof dc !== "object") return [{ field: at, message: 'must be { every: "30m", correct?: boolean } or false.' }];
  const { every, correct } = dc as { every?: unknown; correct?: unknown };
  const p: Problem[] = [];
  const ms = typeof every === "string" || typeof every === "number" ? parseDuration(every) : undefined;
  if (ms === undefined || ms <= 0) p.push({ field: `${at}.every`, message: `'${String(every)}' is not a positive duration. Use e.g. "30m".` });
  if (correct !== undefined && typeof correct !== "boolean") p.push({ field: `${at}.correct`, message: "must be true or false." });
  return p;
}
