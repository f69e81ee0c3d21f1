import { readFile } from "node:fs/promises";
import { resolve } from "node:path";
import { messageOf } from "../errors.ts";
import { MAX_DATA_DEPTH } from "../data-depth.ts";
import { catalogServices, consulKv, schedule, services, type Condition, type ConsulKvCondition, type ServicesCondition, type TaskInputs } from "../task/conditions.ts";
import { ModuleTask, type ModuleProvider } from "../task/module-task.ts";
import type { BufferPeriodOption } from "../task/task.ts";
import { configError, type ReadBlock } from "./cts-schema.ts";
import { isObject } from "../is-object.ts";
import { taskNameProblem, taskProblems } from "../task/validate.ts";
import { redactSecret } from "../log.ts";
import { parseHcl, type HclValue } from "./hcl.ts";

interface TaskContext {
  cwd: string;
  providerReqs: Record<string, { source?: string; version?: string }>;
  globalBuffer: BufferPeriodOption | false | undefined;
  warn: string[];
}

const one = (b: ReadBlock, name: string): ReadBlock | undefined => b.blocks[name]?.[0];

/** CTS `task` blocks as ModuleTasks (CTS-SOURCE-NOTES §1.5), with their providers resolved. */
export async function ctsTasks(root: ReadBlock, ctx: TaskContext): Promise<ModuleTask<Condition, TaskInputs>[]> {
  const providers = providerBlocks(root, ctx);
  const tasks: ModuleTask<Condition, TaskInputs>[] = [];
  const seen = new Map<string, string>();
  for (const t of root.blocks.task ?? []) {
    const a = t.attrs;
    const fail = (key: string, msg: string): never => {
      throw configError(t.file, t.lines[key] ?? t.line, msg);
    };
    for (const k of ["terraform_version"]) if (a[k] !== undefined) fail(k, `'${k}' is a CTS Enterprise feature (Terraform Cloud) that cts does not support. Remove it.`);
    if (a.services !== undefined) fail("services", "the task 'services' list (deprecated since CTS 0.5) is not supported. Use condition \"services\" { names = [...] }.");
    if (a.variables !== undefined) fail("variables", "'variables' cannot be set in a config file (as in CTS). Put them in a .tfvars file and list it in variable_files.");
    if (typeof a.name !== "string" || a.name === "") fail("name", "a task needs name = \"...\".");
    const name = a.name as string;
    const nameProblem = taskNameProblem(name);
    if (nameProblem) fail("name", `task name ${nameProblem}`);
    if (seen.has(name)) fail("name", `task '${name}' is configured twice (also at ${seen.get(name)}). Task names must be unique.`);
    seen.set(name, `${t.file}:${t.lines.name ?? t.line}`);
    if (a.working_dir !== undefined) fail("working_dir", `a per-task working_dir is not supported: task '${name}' works in <working_dir>/${name}. Set the global working_dir instead.`);
    const module = a.module ?? a.source;
    if (typeof module !== "string" || module === "") fail("module", `task '${name}' needs module = "<path or registry address>".`);
    const conditions = t.blocks.condition ?? [];
    if (conditions.length !== 1) throw configError(t.file, conditions[1]?.line ?? t.line, `task '${name}' should be configured with exactly one condition block (found ${conditions.length}).`);
    const { condition, useAsModuleInput } = readCondition(conditions[0]!);
    const inputs: TaskInputs = {};
    for (const mi of [...(t.blocks.module_input ?? []), ...(t.blocks.source_input ?? [])]) {
      const kind = mi.labels[0];
      if (kind === "services") inputs.services = servicesQuery(mi);
      else if (kind === "consul-kv") inputs.kv = kvQuery(mi);
      else throw configError(mi.file, mi.line, `module_input "${kind}" is not known. Use module_input "services" or "consul-kv".`);
    }
    if ((inputs.services && condition.kind === "services") || (inputs.kv && condition.kind === "consul-kv"))
      throw configError(t.file, t.line, `task '${name}': a module_input may not repeat the condition's type (${condition.kind}).`);
    const bp = one(t, "buffer_period");
    const taskProviders = ((a.providers ?? []) as HclValue[]).map((id) => {
      const p = providers.get(String(id));
      if (!p) return fail("providers", `task '${name}' uses provider '${String(id)}', which has no terraform_provider block. Add terraform_provider "${String(id).split(".")[0]}" { … }.`);
      return p;
    });
    const names = taskProviders.map((p) => p.name);
    if (new Set(names).size !== names.length) fail("providers", `task '${name}' lists two instances of one provider; CTS allows one per provider name.`);
    const variableFiles = ((a.variable_files ?? []) as HclValue[]).map((f) => resolve(ctx.cwd, String(f)));
    const task = new ModuleTask<Condition, TaskInputs>({
      name,
      description: a.description === undefined ? "" : String(a.description),
      enabled: a.enabled !== false,
      condition,
      inputs,
      module: module as string,
      ...(a.version !== undefined ? { version: String(a.version) } : {}),
      ...(useAsModuleInput === false ? { useAsModuleInput: false } : {}),
      variables: await readVariableFiles(variableFiles, t),
      providers: taskProviders,
      ...(condition.kind === "schedule" ? {} : bp ? { bufferPeriod: bufferPeriod(bp) } : {}),
      // cts's own key (CTS has none): refuse to apply a condition that dropped to no instances.
      ...(a.cts_allow_empty !== undefined ? { allowEmpty: a.cts_allow_empty as boolean } : {}),
    });
    // The checks every task gets (cron, regexp, buffer period…), reported at the task's place in the file.
    const problems = taskProblems(task);
    if (problems.length) throw configError(t.file, t.line, `task '${name}': ${problems.map((p) => `${p.field} ${p.message}`).join(" ")}`);
    tasks.push(task);
  }
  return tasks;
}

function readCondition(c: ReadBlock): { condition: Condition; useAsModuleInput?: boolean } {
  const a = c.attrs;
  const use = (a.use_as_module_input ?? a.source_includes_var) as boolean | undefined;
  const allowed: Record<string, string[]> = {
    services: ["names", "regexp", "datacenter", "namespace", "filter", "cts_user_defined_meta"],
    "catalog-services": ["regexp", "datacenter", "namespace", "node_meta"],
    "consul-kv": ["path", "recurse", "datacenter", "namespace"],
    schedule: ["cron"],
  };
  const kind = c.labels[0]!;
  if (!allowed[kind]) throw configError(c.file, c.line, `condition "${kind}" is not known. Use "services", "catalog-services", "consul-kv" or "schedule".`);
  for (const k of Object.keys(a))
    if (!allowed[kind]!.includes(k) && !(kind !== "schedule" && (k === "use_as_module_input" || k === "source_includes_var")))
      throw configError(c.file, c.lines[k] ?? c.line, `'${k}' is not a valid key in condition "${kind}". Valid keys: ${allowed[kind]!.join(", ")}${kind === "schedule" ? "" : ", use_as_module_input"}.`);
  const condition: Condition =
    kind === "services"
      ? servicesQuery(c)
      : kind === "catalog-services"
        ? catalogServices({ regexp: String(a.regexp ?? ""), ...opt(a, "datacenter"), ...opt(a, "namespace"), ...(isObject(a.node_meta) ? { nodeMeta: a.node_meta as Record<string, string> } : {}) })
        : kind === "consul-kv"
          ? kvQuery(c)
          : schedule({ cron: String(a.cron ?? "") });
  if (kind === "catalog-services" && a.regexp === undefined) throw configError(c.file, c.line, 'condition "catalog-services" needs regexp (use "" for every service).');
  return { condition, ...(use === undefined ? {} : { useAsModuleInput: use }) };
}

function servicesQuery(b: ReadBlock): ServicesCondition {
  const a = b.attrs;
  const names = Array.isArray(a.names) && a.names.length ? (a.names as string[]) : undefined;
  if (names && a.regexp !== undefined) throw configError(b.file, b.lines.names ?? b.line, "names and regexp are both set. Use one of them.");
  if (!names && a.regexp === undefined) throw configError(b.file, b.line, "a services condition or module_input needs names or regexp.");
  return services({
    ...(names ? { names } : { regexp: String(a.regexp) }),
    ...opt(a, "datacenter"),
    ...opt(a, "namespace"),
    ...opt(a, "filter"),
    ...(isObject(a.cts_user_defined_meta) ? { userMeta: a.cts_user_defined_meta as Record<string, string> } : {}),
  });
}

function kvQuery(b: ReadBlock): ConsulKvCondition {
  const a = b.attrs;
  if (typeof a.path !== "string" || a.path === "") throw configError(b.file, b.line, "consul-kv needs path = \"...\".");
  return consulKv({ path: a.path, recurse: a.recurse === true, ...opt(a, "datacenter"), ...opt(a, "namespace") });
}

const opt = (a: Record<string, HclValue>, k: string) => (a[k] === undefined ? {} : { [k]: String(a[k]) });

/** `terraform_provider` blocks by id (`name` or `name.alias`), their `{{ env "X" }}` resolved now, as CTS does at start. */
function providerBlocks(root: ReadBlock, ctx: TaskContext): Map<string, ModuleProvider> {
  const out = new Map<string, ModuleProvider>();
  for (const p of root.blocks.terraform_provider ?? []) {
    const name = p.labels[0]!;
    const { alias, task_env, auto_commit, ...args } = p.attrs;
    const id = alias === undefined ? name : `${name}.${String(alias)}`;
    if (out.has(id)) throw configError(p.file, p.line, `terraform_provider '${id}' is configured twice. Give one an alias.`);
    if (auto_commit !== undefined) ctx.warn.push(`${p.file}:${p.lines.auto_commit}: 'auto_commit' has no effect: cts has no PAN-OS commit handler.`);
    const env = (v: HclValue, key: string): HclValue => expand(v, key, p);
    const taskEnv: Record<string, string> = {};
    if (task_env !== undefined) {
      if (!isObject(task_env)) throw configError(p.file, p.lines.task_env ?? p.line, "task_env must be a block of NAME = \"value\".");
      for (const [k, v] of Object.entries(task_env)) taskEnv[k] = String(env(v, "task_env"));
    }
    const config: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(args)) config[k] = env(v, k);
    out.set(id, { name, config, taskEnv, ...ctx.providerReqs[name] });
  }
  return out;
}

const TEMPLATE = /\{\{-?\s*(.*?)\s*-?\}\}/g;

/** Resolves `{{ env "X" }}` in strings; other templates (key, Vault secrets) are refused. */
function expand(v: HclValue, key: string, p: ReadBlock): HclValue {
  if (typeof v === "string")
    return v.replace(TEMPLATE, (_m, body: string) => {
      const m = /^env\s+"([^"]+)"$/.exec(body);
      if (!m) throw configError(p.file, p.lines[key] ?? p.line, `'{{ ${body} }}' is not supported in terraform_provider "${p.labels[0]}": only {{ env "NAME" }} is (no Consul key or Vault templates).`);
      const value = process.env[m[1]!] ?? "";
      // Values read from the environment are usually credentials: never let a log line show them.
      if (value) redactSecret(value);
      return value;
    });
  if (Array.isArray(v)) return v.map((x) => expand(x, key, p));
  if (isObject(v)) return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, expand(x, key, p)]));
  return v;
}

/** Reads `.tfvars` files in order (later files win), as CTS does at load time. */
export async function readVariableFiles(files: string[], at?: ReadBlock): Promise<Record<string, unknown>> {
  const out: Record<string, unknown> = {};
  for (const file of files) {
    let text: string;
    try {
      text = await readFile(file, "utf8");
    } catch (err) {
      if (at) throw configError(at.file, at.lines.variable_files ?? at.line, `variable file '${file}' cannot be read: ${messageOf(err)}.`);
      throw err;
    }
    const body = await parseHcl(text, file, "CONFIG_INVALID", MAX_DATA_DEPTH);
    if (body.blocks.length) throw configError(file, body.blocks[0]!.line, `a .tfvars file holds NAME = value lines only; '${body.blocks[0]!.type}' is a block.`);
    for (const [k, v] of body.attributes) out[k] = v.value;
  }
  return out;
}

/** CTS's buffer period rules: enabled=false → off; only min → max = 4×min (our default too). */
export function bufferPeriod(b: ReadBlock): BufferPeriodOption | false {
  if (b.attrs.enabled === false) return false;
  const out: BufferPeriodOption = {};
  if (b.attrs.min !== undefined) out.min = String(b.attrs.min);
  if (b.attrs.max !== undefined) out.max = String(b.attrs.max);
  return out;
}
