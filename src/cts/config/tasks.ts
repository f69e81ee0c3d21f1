import { readFile } from "node:fs/promises";
import { resolve } from "node:path";
import { messageOf } from "../../errors/cts-error.ts";
import { MAX_DATA_DEPTH } from "../../values/data-depth.ts";
import {
  catalogServices,
  configEntries,
  consulKv,
  intentions,
  nodes,
  schedule,
  services,
  type Condition,
  type ConfigEntriesCondition,
  type ConsulKvCondition,
  type IntentionsCondition,
  type NodesCondition,
  type ServicesCondition,
  type TaskInputs,
} from "../../task/conditions.ts";
import { ModuleTask, type ModuleProvider } from "../../task/module-task.ts";
import type { BufferPeriodOption, TerraformCloudWorkspaceOption } from "../../task/task.ts";
import type { CtsDriverLabel } from "./drivers.ts";
import { TFC_TERRAFORM_CONSTRAINT } from "../../tfc/supported-versions.ts";
import { terraformCloudWorkspaceProblems } from "../../config/terraform-cloud.ts";
import { configError, type ReadBlock } from "../../config/hcl-schema.ts";
import { guardProblems, type ApprovalMode, type PlanGuards } from "../../task/guards.ts";
import { isObject } from "../../values/is-object.ts";
import { taskNameProblem, taskProblems } from "../../task/validate.ts";
import { redactSecret } from "../../log/logger.ts";
import { isTemplateValue, parseProviderTemplate, TemplateSyntaxError, type TemplateValue } from "../../task/provider-templates.ts";
import { parseHcl, type HclValue } from "../../config/hcl.ts";
import { workingDirProblems } from "../../config/working-dirs.ts";
import { triggerProblems, type ServicesTrigger } from "../../task/service-trigger.ts";
import { chainProblems } from "../../task/chains.ts";
import { deprecatedServices, taskModule, useAsModuleInput, warnSourceInputs } from "./deprecated.ts";

interface TaskContext {
  cwd: string;
  /** The working root (global working_dir, from cwd), against which task working_dirs are checked. */
  root?: string;
  providerReqs: Record<string, { source?: string; version?: string }>;
  globalBuffer: BufferPeriodOption | false | undefined;
  warn: string[];
  /** The driver the tasks run on: the workspace settings are only valid on "terraform-cloud" (undefined: not known here, fromCtsConfig). */
  driver?: CtsDriverLabel;
}

const one = (b: ReadBlock, name: string): ReadBlock | undefined => b.blocks[name]?.[0];

/** CTS `task` blocks as ModuleTasks (CTS-SOURCE-NOTES §1.5), with their providers resolved. */
export async function ctsTasks(root: ReadBlock, ctx: TaskContext): Promise<ModuleTask<Condition, TaskInputs>[]> {
  const providers = providerBlocks(root, ctx);
  const tasks: ModuleTask<Condition, TaskInputs>[] = [];
  const blocks: ReadBlock[] = [];
  const seen = new Map<string, string>();
  for (const t of root.blocks.task ?? []) {
    const a = t.attrs;
    const fail = (key: string, msg: string): never => {
      throw configError(t.file, t.lines[key] ?? t.line, msg);
    };
    if (a.variables !== undefined) fail("variables", "'variables' cannot be set in a config file (as in CTS). Put them in a .tfvars file and list it in variable_files.");
    if (typeof a.name !== "string" || a.name === "") fail("name", "a task needs name = \"...\".");
    const name = a.name as string;
    const nameProblem = taskNameProblem(name);
    if (nameProblem) fail("name", `task name ${nameProblem}`);
    if (seen.has(name)) fail("name", `task '${name}' is configured twice (also at ${seen.get(name)}). Task names must be unique.`);
    seen.set(name, `${t.file}:${t.lines.name ?? t.line}`);
    if (a.working_dir !== undefined && (typeof a.working_dir !== "string" || a.working_dir.trim() === ""))
      fail("working_dir", `task '${name}': working_dir must be a folder path. Leave it out to work in <working_dir>/${name}.`);
    const module = taskModule(t, ctx.warn);
    if (typeof module !== "string" || module === "") fail("module", `task '${name}' needs module = "<path or registry address>".`);
    warnSourceInputs(t, ctx.warn);
    const listed = deprecatedServices(t, root.blocks.service ?? [], ctx.warn);
    const conditions = t.blocks.condition ?? [];
    if (conditions.length > 1 || (conditions.length === 0 && !listed))
      throw configError(t.file, conditions[1]?.line ?? t.line, `task '${name}' should be configured with exactly one condition block (found ${conditions.length}).`);
    const { condition, useAsModuleInput } = conditions[0] ? readCondition(conditions[0], ctx.warn) : { condition: listed!, useAsModuleInput: undefined };
    if (listed && conditions[0] && condition.kind === "services")
      fail("services", `task '${name}': the 'services' list and condition "services" both watch services; CTS allows only one of them. Move the names into the condition block.`);
    const inputs: TaskInputs = {};
    if (listed && conditions[0]) inputs.services = listed;
    for (const mi of [...(t.blocks.module_input ?? []), ...(t.blocks.source_input ?? [])]) {
      const kind = mi.labels[0];
      if (kind === "services" && listed) throw configError(mi.file, mi.line, `task '${name}': the 'services' list and module_input "services" both provide services; CTS allows only one of them.`);
      if (kind === "services") inputs.services = servicesQuery(mi);
      else if (kind === "consul-kv") inputs.kv = kvQuery(mi);
      // cts's own module inputs (CTS has none).
      else if (kind === "nodes") inputs.nodes = nodesQuery(mi);
      else if (kind === "intentions") inputs.intentions = intentionsQuery(mi);
      else if (kind === "config-entries") inputs.configEntries = configEntriesQuery(mi);
      else throw configError(mi.file, mi.line, `module_input "${kind}" is not known. Use module_input "services" or "consul-kv" (CTS's), or "nodes", "intentions" or "config-entries" (cts's own).`);
    }
    const repeated = (["services", "kv", "nodes", "intentions", "configEntries"] as const).some((k) => inputs[k] && inputs[k]!.kind === condition.kind);
    if (repeated)
      throw configError(t.file, t.line, `task '${name}': a module_input may not repeat the condition's type (${condition.kind}).`);
    const workspace = taskWorkspace(t, name, ctx);
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
      // Relative to where cts starts, as CTS takes it from its working directory.
      ...(typeof a.working_dir === "string" ? { workingDir: resolve(ctx.cwd, a.working_dir) } : {}),
      ...(condition.kind === "schedule" ? {} : bp ? { bufferPeriod: bufferPeriod(bp) } : {}),
      ...(workspace ? { terraformCloudWorkspace: workspace } : {}),
      ...guardsOf(one(t, "guards"), true),
      // cts's own key (CTS has none): refuse to apply a condition that dropped to no instances.
      ...(a.cts_allow_empty !== undefined ? { allowEmpty: a.cts_allow_empty as boolean } : {}),
      // cts's own keys (CTS has none): the module outputs shown as the task's outputs (CTS #1046).
      ...(a.cts_outputs !== undefined ? { outputs: a.cts_outputs as string[] } : {}),
      ...(a.cts_sensitive_outputs !== undefined ? { sensitiveOutputs: a.cts_sensitive_outputs as string[] } : {}),
      // cts's own key (CTS has none): task chains (CTS #329), the tasks this one runs after.
      ...(a.cts_after !== undefined ? { after: a.cts_after as string[] } : {}),
    });
    // The checks every task gets (cron, regexp, buffer period…), reported at the task's place in the file.
    const problems = taskProblems(task);
    const outputsProblem = problems.find((p) => /^(outputs|sensitiveOutputs)\b/.test(p.field));
    if (outputsProblem) {
      const key = outputsProblem.field.startsWith("outputs") ? "cts_outputs" : "cts_sensitive_outputs";
      fail(key, `task '${name}': ${key}${outputsProblem.field.replace(/^\w+/, "")} ${outputsProblem.message}`);
    }
    const afterProblem = problems.find((p) => p.field.startsWith("after"));
    if (afterProblem) fail("cts_after", `task '${name}': cts_after${afterProblem.field.slice("after".length)} ${afterProblem.message.replace("after: [", "cts_after = [")}`);
    if (problems.length) throw configError(t.file, t.line, `task '${name}': ${problems.map((p) => `${p.field} ${p.message}`).join(" ")}`);
    tasks.push(task);
    blocks.push(t);
  }
  // Task chains: every name in a cts_after is a task here, and no chain runs in a circle.
  const [chain] = chainProblems(tasks);
  if (chain) {
    const b = blocks[tasks.findIndex((t) => t.name === chain.task)]!;
    throw configError(b.file, b.lines.cts_after ?? b.line, `task '${chain.task}': cts_after${chain.field.slice("after".length)} ${chain.message.replace("an `after`", "a `cts_after`")}`);
  }
  // Where the tasks work, reported at the working_dir of the task that cannot have it.
  const [first] = ctx.root ? workingDirProblems(ctx.cwd, ctx.root, tasks) : [];
  if (first) {
    const b = blocks[Number(/^tasks\[(\d+)\]/.exec(first.field)?.[1] ?? 0)]!;
    throw configError(b.file, b.lines.working_dir ?? b.line, `task '${String(b.attrs.name)}': working_dir ${first.message}`);
  }
  return tasks;
}

const WORKSPACE_KEYS: Record<string, keyof TerraformCloudWorkspaceOption> = {
  execution_mode: "executionMode",
  agent_pool_id: "agentPoolId",
  agent_pool_name: "agentPoolName",
  terraform_version: "terraformVersion",
};

/**
 * The task's `terraform_cloud_workspace` block and deprecated `terraform_version` (the block's
 * version wins), checked with CTS's rules. Under driver "terraform" a non-empty setting is refused,
 * as CTS (OSS) refuses it: it would silently do nothing there.
 */
function taskWorkspace(t: ReadBlock, name: string, ctx: TaskContext): TerraformCloudWorkspaceOption | undefined {
  const blk = one(t, "terraform_cloud_workspace");
  const block: TerraformCloudWorkspaceOption = {};
  for (const [key, field] of Object.entries(WORKSPACE_KEYS)) {
    const v = blk?.attrs[key];
    if (v === undefined) continue;
    if (typeof v !== "string") throw configError(blk!.file, blk!.lines[key] ?? blk!.line, `'terraform_cloud_workspace.${key}' must be a string.`);
    if (v !== "") (block as Record<string, string>)[field] = v;
  }
  const taskVersion = t.attrs.terraform_version;
  if (taskVersion !== undefined && typeof taskVersion !== "string") throw configError(t.file, t.lines.terraform_version ?? t.line, "'terraform_version' must be a string.");
  if (ctx.driver === "terraform") {
    if (taskVersion) throw configError(t.file, t.lines.terraform_version ?? t.line, `task '${name}': 'terraform_version' is only valid with driver "terraform-cloud" (as in CTS). Remove it, or configure driver "terraform-cloud" { … }; the local driver runs the binary in driver "terraform" { path }.`);
    const set = Object.keys(block);
    if (set.length) throw configError(blk!.file, blk!.lines[Object.keys(WORKSPACE_KEYS).find((k) => blk!.attrs[k])!] ?? blk!.line, `task '${name}': 'terraform_cloud_workspace' is only valid with driver "terraform-cloud" (as in CTS). Remove the block, or configure driver "terraform-cloud" { … }.`);
    return undefined;
  }
  if (taskVersion) ctx.warn.push(`${t.file}:${t.lines.terraform_version ?? t.line}: 'terraform_version' is deprecated: write terraform_cloud_workspace { terraform_version = "${taskVersion}" } in task '${name}'.`);
  const keyOf = (field: string) => Object.keys(WORKSPACE_KEYS).find((k) => WORKSPACE_KEYS[k] === field.split(".").pop())!;
  const problems = terraformCloudWorkspaceProblems(block, "ws", taskVersion ? { version: taskVersion, field: "task.terraform_version" } : undefined);
  for (const p of problems) {
    if (p.field === "task.terraform_version") throw configError(t.file, t.lines.terraform_version ?? t.line, `task '${name}': terraform_version: ${p.message}. Write an exact version x.y.z within ${TFC_TERRAFORM_CONSTRAINT}.`);
    const key = keyOf(p.field);
    const fix = /is required/.test(p.message) ? ' Add agent_pool_id or agent_pool_name, or use execution_mode = "remote".' : (WORKSPACE_FIXES[key] ?? "");
    throw configError(blk!.file, blk!.lines[key] ?? blk!.line, `task '${name}': terraform_cloud_workspace.${key}: ${p.message}.${fix}`);
  }
  // CTS: a warning only, the id wins.
  if (block.agentPoolId && block.agentPoolName) ctx.warn.push(`${blk!.file}:${blk!.lines.agent_pool_name ?? blk!.line}: task '${name}': agent_pool_id and agent_pool_name are both configured, agent_pool_id will be used.`);
  // The block's version wins over the task's deprecated one (CTS-TFC-NOTES §1).
  const version = block.terraformVersion || taskVersion || undefined;
  const out: TerraformCloudWorkspaceOption = { ...block, ...(version ? { terraformVersion: version } : {}) };
  return Object.keys(out).length ? out : undefined;
}

const WORKSPACE_FIXES: Record<string, string> = {
  execution_mode: ' Set execution_mode = "remote" or "agent" (with agent_pool_id or agent_pool_name).',
  agent_pool_id: ' Set execution_mode = "agent", or remove the agent pool.',
  agent_pool_name: ' Set execution_mode = "agent", or remove the agent pool.',
  terraform_version: ` Write an exact version x.y.z within ${TFC_TERRAFORM_CONSTRAINT}.`,
};

function readCondition(c: ReadBlock, warn: string[]): { condition: Condition; useAsModuleInput?: boolean } {
  const a = c.attrs;
  const use = useAsModuleInput(c, warn);
  const allowed: Record<string, string[]> = {
    services: ["names", "regexp", "datacenter", "namespace", "filter", "cts_user_defined_meta", "cts_trigger", "peer", "partition", "sameness_group"],
    "catalog-services": ["regexp", "datacenter", "namespace", "node_meta"],
    "consul-kv": ["path", "recurse", "datacenter", "namespace"],
    schedule: ["cron"],
    // cts's own conditions (CTS has none).
    nodes: NODES_KEYS,
    intentions: INTENTIONS_KEYS,
    "config-entries": CONFIG_ENTRIES_KEYS,
  };
  const kind = c.labels[0]!;
  if (!allowed[kind]) throw configError(c.file, c.line, `condition "${kind}" is not known. Use "services", "catalog-services", "consul-kv" or "schedule" (CTS's), or "nodes", "intentions" or "config-entries" (cts's own).`);
  for (const k of Object.keys(a))
    if (!allowed[kind]!.includes(k) && !(kind !== "schedule" && (k === "use_as_module_input" || k === "source_includes_var")))
      throw configError(c.file, c.lines[k] ?? c.line, `'${k}' is not a valid key in condition "${kind}". Valid keys: ${allowed[kind]!.join(", ")}${kind === "schedule" ? "" : ", use_as_module_input"}.`);
  const condition: Condition =
    kind === "services"
      ? servicesQuery(c, ctsTrigger(c))
      : kind === "catalog-services"
        ? catalogServices({ regexp: String(a.regexp ?? ""), ...opt(a, "datacenter"), ...opt(a, "namespace"), ...(isObject(a.node_meta) ? { nodeMeta: a.node_meta as Record<string, string> } : {}) })
        : kind === "consul-kv"
          ? kvQuery(c)
          : kind === "nodes"
            ? nodesQuery(c)
            : kind === "intentions"
              ? intentionsQuery(c)
              : kind === "config-entries"
                ? configEntriesQuery(c)
                : schedule({ cron: String(a.cron ?? "") });
  if (kind === "catalog-services" && a.regexp === undefined) throw configError(c.file, c.line, 'condition "catalog-services" needs regexp (use "" for every service).');
  return { condition, ...(use === undefined ? {} : { useAsModuleInput: use }) };
}

/**
 * cts's own `cts_trigger` of a services condition (CTS has no such key): `"change"` (default),
 * `"register"`, `"deregister"`, or a count threshold `cts_trigger { above = 3 }` / `{ below = 1 }`.
 */
function ctsTrigger(c: ReadBlock): ServicesTrigger | undefined {
  const v = c.attrs.cts_trigger;
  if (v === undefined) return undefined;
  const value = Array.isArray(v) && v.length === 1 && isObject(v[0]) ? v[0] : v;
  const [problem] = triggerProblems(value, "cts_trigger", true);
  if (problem) throw configError(c.file, c.lines.cts_trigger ?? c.line, `condition "services": ${problem.field} ${problem.message}`);
  return value as ServicesTrigger;
}

function servicesQuery(b: ReadBlock, trigger?: ServicesTrigger): ServicesCondition {
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
    // cts's own keys (CTS has none): Consul's ?peer=, ?partition=, ?sameness-group=.
    ...opt(a, "peer"),
    ...opt(a, "partition"),
    ...(a.sameness_group === undefined ? {} : { samenessGroup: String(a.sameness_group) }),
    ...(trigger === undefined ? {} : { trigger }),
  });
}

const NODES_KEYS = ["datacenter", "partition", "filter", "node_meta"];
const INTENTIONS_KEYS = ["destination", "datacenter", "namespace", "partition"];
const CONFIG_ENTRIES_KEYS = ["kind", "name", "datacenter", "namespace", "partition"];

/** Refuses a key a cts-own block does not take (its schema is shared with CTS's condition kinds). */
function onlyKeys(b: ReadBlock, what: string, keys: string[]): void {
  for (const k of Object.keys(b.attrs))
    if (!keys.includes(k) && k !== "use_as_module_input") throw configError(b.file, b.lines[k] ?? b.line, `'${k}' is not a valid key in ${what}. Valid keys: ${keys.join(", ")}.`);
}

/** cts's own `condition "nodes"` / `module_input "nodes"`: the catalog's nodes. */
function nodesQuery(b: ReadBlock): NodesCondition {
  onlyKeys(b, `a "nodes" block`, NODES_KEYS);
  const a = b.attrs;
  if (a.node_meta !== undefined && !isObject(a.node_meta)) throw configError(b.file, b.lines.node_meta ?? b.line, 'node_meta must be a map, e.g. node_meta = { role = "edge" }.');
  return nodes({ ...opt(a, "datacenter"), ...opt(a, "partition"), ...opt(a, "filter"), ...(isObject(a.node_meta) ? { nodeMeta: a.node_meta as Record<string, string> } : {}) });
}

/** cts's own `condition "intentions"` / `module_input "intentions"`: one destination's intentions, or all. */
function intentionsQuery(b: ReadBlock): IntentionsCondition {
  onlyKeys(b, `an "intentions" block`, INTENTIONS_KEYS);
  const a = b.attrs;
  return intentions({ ...opt(a, "destination"), ...opt(a, "datacenter"), ...opt(a, "namespace"), ...opt(a, "partition") });
}

/** cts's own `condition "config-entries"` / `module_input "config-entries"`: a kind's entries, or one by name. */
function configEntriesQuery(b: ReadBlock): ConfigEntriesCondition {
  onlyKeys(b, `a "config-entries" block`, CONFIG_ENTRIES_KEYS);
  const a = b.attrs;
  if (typeof a.kind !== "string" || a.kind === "") throw configError(b.file, b.line, 'config-entries needs kind = "..." (e.g. "service-defaults").');
  return configEntries({ kind: a.kind, ...opt(a, "name"), ...opt(a, "datacenter"), ...opt(a, "namespace"), ...opt(a, "partition") });
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
    const env = (v: HclValue, key: string): unknown => expand(v, key, p);
    const taskEnv: Record<string, string | TemplateValue> = {};
    if (task_env !== undefined) {
      if (!isObject(task_env)) throw configError(p.file, p.lines.task_env ?? p.line, "task_env must be a block of NAME = \"value\".");
      for (const [k, v] of Object.entries(task_env)) {
        const x = env(v as HclValue, "task_env");
        taskEnv[k] = isTemplateValue(x) ? x : String(x);
      }
    }
    const config: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(args)) config[k] = env(v, k);
    out.set(id, { name, config, taskEnv, ...ctx.providerReqs[name] });
  }
  return out;
}

/**
 * CTS's templates in strings of a provider block: `{{ env "X" }}` resolved now (as CTS does at start),
 * `{{ key "…" }}` and `{{ with secret "…" }}…{{ end }}` kept as template values the runtime renders
 * before each run (src/task/provider-templates.ts); anything else is refused with its place.
 */
function expand(v: HclValue, key: string, p: ReadBlock): unknown {
  if (typeof v === "string") {
    try {
      return parseProviderTemplate(v, (name) => {
        const value = process.env[name] ?? "";
        // Values read from the environment are usually credentials: never let a log line show them.
        if (value) redactSecret(value);
        return value;
      });
    } catch (err) {
      if (err instanceof TemplateSyntaxError) throw configError(p.file, p.lines[key] ?? p.line, `terraform_provider "${p.labels[0]}": ${err.message}.`);
      throw err;
    }
  }
  if (Array.isArray(v)) return v.map((x) => expand(x, key, p));
  if (isObject(v)) return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, expand(x as HclValue, key, p)]));
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

/**
 * cts's `guards { max_destroy = 3, max_destroy_percent = 20, never_empty = ["…"], approval = "always" }`
 * block (a task's, or the global one without approval) as task options. Values are checked with the
 * task's other options (taskProblems); a wrong type is reported here with its line.
 */
export function guardsOf(b: ReadBlock | undefined, inTask: boolean): { guards?: PlanGuards; approval?: ApprovalMode } {
  if (!b) return {};
  const a = b.attrs;
  const fail = (key: string, msg: string): never => {
    throw configError(b.file, b.lines[key] ?? b.line, `guards.${key} ${msg}`);
  };
  const guards: PlanGuards = {};
  for (const [key, field] of [["max_destroy", "maxDestroy"], ["max_destroy_percent", "maxDestroyPercent"]] as const) {
    const v = a[key];
    if (v === undefined) continue;
    if (typeof v !== "number") fail(key, `must be a number (got ${JSON.stringify(v)}).`);
    guards[field] = v as number;
  }
  if (a.never_empty !== undefined) {
    if (!Array.isArray(a.never_empty) || a.never_empty.some((n) => typeof n !== "string")) fail("never_empty", 'must be a list of resource types or addresses, e.g. ["consul_acl_policy", "module.web.local_file.pool"].');
    guards.neverEmpty = a.never_empty as string[];
  }
  const hclKey = (field: string) => field.replace("maxDestroyPercent", "max_destroy_percent").replace("maxDestroy", "max_destroy").replace("neverEmpty", "never_empty");
  const problem = guardProblems(guards, "guards")[0];
  if (problem) throw configError(b.file, b.lines[hclKey(problem.field).split(/[.[]/)[1]!] ?? b.line, `${hclKey(problem.field)} ${problem.message}`);
  if (a.approval !== undefined && !inTask) fail("approval", "is set per task: put it in the task's guards block.");
  if (a.approval !== undefined && a.approval !== "always" && a.approval !== "guards") fail("approval", `must be "always" (every plan waits for \`cts approve\`) or "guards" (the default), got ${JSON.stringify(a.approval)}.`);
  return { ...(Object.keys(guards).length ? { guards } : {}), ...(a.approval !== undefined ? { approval: a.approval as ApprovalMode } : {}) };
}
