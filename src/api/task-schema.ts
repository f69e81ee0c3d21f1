import { z } from "zod";
import { parseDuration } from "../time/duration.ts";
import { taskNameProblem } from "../task/validate.ts";
import { foldKeys, TASK_SHAPE } from "../cts/api/decode.ts";
import { fields, flag, isObject, listOf, objectErrors, refusedKeys, show, stringMap, text, whenObject } from "./schema-messages.ts";

/**
 * The task in CTS's API JSON shape (`POST /v1/tasks`'s `task`), as zod schemas. They check shape
 * and values and carry our messages; turning the result into a module task spec, and the runtime's
 * own checks (cron syntax, buffer vs schedule…), happen in task-request.ts.
 */

/**
 * Decodes what clients send before it is validated: JSON keys match case-insensitively, as in
 * CTS's server (src/cts/api/decode.ts), so the schemas below see our canonical keys. Idempotent. The
 * HCL-encoded `variables` are decoded at the request boundary (src/cts/api/variables.ts), which is async.
 */
export function decodeCtsJson(raw: unknown, at = "task"): unknown {
  return foldKeys(raw, TASK_SHAPE, at);
}

const USE_CONDITIONS = "services, catalog_services, consul_kv, nodes, intentions, config_entries or schedule";
const NAMES = "must be a non-empty list of strings.";
/** Names a module block reserves for itself or that cts fills from Consul data. */
const RESERVED_VARIABLES = new Set(["source", "version", "count", "for_each", "providers", "depends_on", "services", "catalog_services", "consul_kv", "nodes", "intentions", "config_entries"]);
const VARIABLE_NAME = /^[A-Za-z_][A-Za-z0-9_-]*$/;
/** CTS task fields cts refuses, with the fix. */
const REFUSED = {
  variable_files: "is not supported through the API. Put the values in task.variables.",
  services: "is CTS's deprecated task field. Use task.condition.services.names.",
  source: "was renamed to module in CTS 0.5. Use task.module.",
  source_input: "was renamed to module_input in CTS 0.5. Use task.module_input.",
};

const regexp = () =>
  text().superRefine((re, ctx) => {
    try {
      new RegExp(re);
    } catch (e) {
      ctx.addIssue({ code: "custom", message: `is not a valid regular expression: ${(e as Error).message}.` });
    }
  });

const duration = () =>
  text().superRefine((d, ctx) => {
    if (parseDuration(d) === undefined) ctx.addIssue({ code: "custom", message: `'${d.slice(0, 40)}' is not a duration. Use e.g. "5s", "1m30s" or "500ms".` });
  });

const useAsModuleInput = flag()
  .refine((v) => v !== false, { error: "false is not supported: module tasks always pass the condition's data to the module. Leave it out or set true." })
  .optional();

/** Exactly one of names and regexp; `names: []` beside a regexp is CTS's way of saying "regexp". */
function namesOrRegexp(o: { names?: unknown; regexp?: unknown }, ctx: z.RefinementCtx): void {
  const noNames = Array.isArray(o.names) && o.names.length === 0;
  if (o.names !== undefined && !noNames && typeof o.regexp === "string") ctx.addIssue({ code: "custom", path: [], message: "sets both names and regexp. Use one of them." });
  else if (noNames && o.regexp === undefined) ctx.addIssue({ code: "custom", path: ["names"], message: NAMES });
  else if (o.names === undefined && o.regexp === undefined) ctx.addIssue({ code: "custom", path: ["names"], message: "must be a non-empty list of strings (or set regexp)." });
}

const servicesFields = {
  names: listOf(z.string({ error: NAMES }).refine((n) => n.trim() !== "", { error: NAMES }), NAMES).optional(),
  regexp: regexp().optional(),
  datacenter: text().optional(),
  namespace: text().optional(),
  filter: text().optional(),
  cts_user_defined_meta: stringMap().optional(),
  // cts's own (CTS has none): Consul's ?peer=, ?partition=, ?sameness-group= (checked with the task).
  peer: text().optional(),
  partition: text().optional(),
  sameness_group: text().optional(),
};
// cts's own blocks (CTS has none): catalog nodes, service intentions, config entries.
const nodesFields = { datacenter: text().optional(), partition: text().optional(), filter: text().optional(), node_meta: stringMap().optional() };
const intentionsFields = { destination: text().optional(), datacenter: text().optional(), namespace: text().optional(), partition: text().optional() };
const configEntriesFields = { kind: text({ nonEmpty: true }), name: text().optional(), datacenter: text().optional(), namespace: text().optional(), partition: text().optional() };
const kvFields = {
  path: text({ nonEmpty: true }),
  recurse: flag().optional(),
  datacenter: text().optional(),
  namespace: text().optional(),
};

// cts_trigger is cts's own (CTS has none): which changes run the task, checked with the task (service-trigger.ts).
const servicesCondition = fields({ ...servicesFields, use_as_module_input: useAsModuleInput, cts_trigger: z.unknown().optional() }).superRefine(namesOrRegexp, whenObject);
const catalogServicesCondition = fields({
  regexp: regexp(),
  datacenter: text().optional(),
  namespace: text().optional(),
  node_meta: stringMap().optional(),
  use_as_module_input: useAsModuleInput,
});
const consulKvCondition = fields({ ...kvFields, use_as_module_input: useAsModuleInput });
const scheduleCondition = fields({ cron: text({ nonEmpty: true }) });
const nodesCondition = fields({ ...nodesFields, use_as_module_input: useAsModuleInput });
const intentionsCondition = fields({ ...intentionsFields, use_as_module_input: useAsModuleInput });
const configEntriesCondition = fields({ ...configEntriesFields, use_as_module_input: useAsModuleInput });

/** The condition blocks by key, with HCL's dashed spellings beside the API's underscored ones. */
const CONDITION_BLOCKS = {
  services: servicesCondition,
  catalog_services: catalogServicesCondition,
  "catalog-services": catalogServicesCondition,
  consul_kv: consulKvCondition,
  "consul-kv": consulKvCondition,
  nodes: nodesCondition,
  intentions: intentionsCondition,
  config_entries: configEntriesCondition,
  "config-entries": configEntriesCondition,
  schedule: scheduleCondition,
};

/** `{ services: {...} }` and friends: exactly one known block, checked before the block itself. */
const conditionSchema = z
  .record(z.string(), z.unknown(), {
    error: (iss) => (iss.input === undefined ? `is required. Use one of ${USE_CONDITIONS}.` : `must be an object with one of ${USE_CONDITIONS} (got ${show(iss.input)}).`),
  })
  .superRefine((c, ctx) => {
    const keys = Object.keys(c);
    const unknown = keys.find((k) => !(k in CONDITION_BLOCKS));
    if (unknown !== undefined) ctx.addIssue({ code: "custom", path: [unknown.slice(0, 60)], message: `is not a condition. Use ${USE_CONDITIONS}.` });
    else if (keys.length !== 1) ctx.addIssue({ code: "custom", path: [], message: `must have exactly one condition (got ${keys.length ? keys.join(", ") : "none"}).` });
  })
  .pipe(z.object(CONDITION_BLOCKS).partial());

const servicesInput = fields(servicesFields).superRefine(namesOrRegexp, whenObject);
const consulKvInput = fields(kvFields);
const nodesInput = fields(nodesFields);
const intentionsInput = fields(intentionsFields);
const configEntriesInput = fields(configEntriesFields);
const moduleInputSchema = fields(
  {
    services: servicesInput.optional(),
    consul_kv: consulKvInput.optional(),
    "consul-kv": consulKvInput.optional(),
    nodes: nodesInput.optional(),
    intentions: intentionsInput.optional(),
    config_entries: configEntriesInput.optional(),
    "config-entries": configEntriesInput.optional(),
  },
  { like: "with services, consul_kv, nodes, intentions and/or config_entries", unknownKey: "is not a module input. Use services, consul_kv, nodes, intentions or config_entries." },
);

const bufferPeriodSchema = fields(
  { enabled: flag().optional(), min: duration().optional(), max: duration().optional() },
  { like: `like {"enabled":true,"min":"5s","max":"20s"}` },
);

const variablesSchema = z
  .record(z.string(), z.unknown(), { error: (iss) => `must be an object of variable names to values (got ${show(iss.input)}).` })
  .superRefine((vars, ctx) => {
    for (const [k, v] of Object.entries(vars)) {
      if (!VARIABLE_NAME.test(k))
        ctx.addIssue({ code: "custom", path: [k.slice(0, 60)], message: "is not a valid Terraform variable name (letters, digits, '_' and '-', not starting with a digit)." });
      else if (RESERVED_VARIABLES.has(k))
        ctx.addIssue({ code: "custom", path: [k], message: "is reserved (a module meta-argument, or data cts passes from Consul). Rename the variable in the module." });
      if (v === null) ctx.addIssue({ code: "custom", path: [k], message: "is null. Give a value or leave the variable out." });
    }
  });

const PROVIDERS = "must be a list of strings.";
const providersSchema = listOf(z.string({ error: PROVIDERS }), PROVIDERS).refine((p) => p.length === 0, {
  error: "is not supported: cts has no terraform_provider blocks. Configure providers inside the module (or use a task class), and send providers: [] or leave it out.",
});

/**
 * CTS's `terraform_cloud_workspace` as its Go client sends it (pointer fields, omitempty: absent or
 * a string; `""` is unset, as CTS's IsEmpty treats it). Its rules and the driver check are in task-request.ts.
 */
const tfcWorkspaceSchema = fields(
  { execution_mode: text().optional(), agent_pool_id: text().optional(), agent_pool_name: text().optional(), terraform_version: text().optional() },
  { like: `like {"execution_mode":"agent","agent_pool_name":"pool","terraform_version":"1.5.7"}` },
);

const OUTPUT_NAMES = 'must be a list of the module\'s output names, e.g. ["pool_id"].';
const NEVER_EMPTY = 'must be a list of resource types or addresses, e.g. ["local_file", "module.web.consul_service.pool"].';
const number = () => z.number({ error: (iss) => `must be a number (got ${show(iss.input)}).` });

/**
 * cts's own `guards` block (not CTS's), with the keys of the CTS HCL block of the same name:
 * plan guards and approval, with the ranges of the task's own checks (so every problem is reported at once).
 */
const guardsSchema = fields(
  {
    max_destroy: number()
      .refine((n) => Number.isInteger(n) && n >= 0, { error: (iss) => `must be a whole number ≥ 0 (got ${show(iss.input)}).` })
      .optional(),
    max_destroy_percent: number()
      .refine((n) => Number.isFinite(n) && n >= 0 && n <= 100, { error: (iss) => `must be a number from 0 to 100 (got ${show(iss.input)}).` })
      .optional(),
    never_empty: listOf(z.string({ error: NEVER_EMPTY }), NEVER_EMPTY).optional(),
    approval: z
      .string({ error: (iss) => `must be "always" or "guards" (got ${show(iss.input)}).` })
      .refine((a) => a === "always" || a === "guards", { error: (iss) => `must be "always" (every plan waits for \`cts approve\`) or "guards" (only plans a guard refuses; the default), got ${show(iss.input)}.` })
      .optional(),
  },
  { like: `like {"max_destroy":1,"max_destroy_percent":20,"never_empty":["local_file"],"approval":"always"}` },
);

/** The task's own fields, in the order their problems are reported. */
const taskFields = {
  name: text().superRefine((name, ctx) => {
    const problem = taskNameProblem(name);
    if (problem) ctx.addIssue({ code: "custom", message: problem });
  }),
  module: text({ nonEmpty: true }),
  version: text().optional(),
  description: text().optional(),
  enabled: flag().optional(),
  providers: providersSchema.optional(),
  variables: variablesSchema.optional(),
  condition: conditionSchema,
  module_input: moduleInputSchema.optional(),
  buffer_period: bufferPeriodSchema.optional(),
  /** Terraform Cloud driver only (task-request.ts refuses them under the local driver). */
  terraform_cloud_workspace: tfcWorkspaceSchema.optional(),
  /** CTS's deprecated task-level version (the block's version wins). */
  terraform_version: text().optional(),
  /** cts's own (CTS HCL: the task's `guards` block): plan guards and approval. */
  guards: guardsSchema.optional(),
  /** cts's own (CTS HCL: `cts_allow_empty`): false refuses a condition that dropped from N instances to none. */
  cts_allow_empty: flag().optional(),
  /** cts's own (CTS HCL: `cts_outputs`, `cts_sensitive_outputs`): the module outputs shown as the task's outputs. */
  cts_outputs: listOf(z.string({ error: OUTPUT_NAMES }), OUTPUT_NAMES).optional(),
  cts_sensitive_outputs: listOf(z.string({ error: OUTPUT_NAMES }), OUTPUT_NAMES).optional(),
  /**
   * cts's own (CTS HCL: `cts_after`): task chains, the tasks this one runs after. Checked with the
   * task (a list of other task names, src/task/chains.ts) and against the daemon's tasks (task-chain.ts).
   */
  cts_after: z.unknown().optional(),
  /** What GET answers (where the task was defined); accepted so a GET answer can be sent back. */
  origin: z.unknown().optional(),
};

/** Which condition kind each block key is (module_input may not repeat the condition's kind). */
const KIND_OF: Record<string, string> = {
  services: "services",
  catalog_services: "catalog",
  "catalog-services": "catalog",
  consul_kv: "kv",
  "consul-kv": "kv",
  nodes: "nodes",
  intentions: "intentions",
  config_entries: "config",
  "config-entries": "config",
  schedule: "schedule",
};

/** A task in CTS's API JSON shape; the refused CTS fields come first so their hints lead. */
export const ctsTaskSchema = z
  .strictObject({ ...refusedKeys(REFUSED), ...taskFields }, { error: objectErrors({ known: Object.keys(taskFields) }) })
  .superRefine((t, ctx) => {
    // A chained task's module gets the upstream outputs as `upstream_outputs`: a variable of that name would replace them.
    if (Array.isArray(t.cts_after) && t.cts_after.length && isObject(t.variables) && "upstream_outputs" in t.variables)
      ctx.addIssue({ code: "custom", path: ["variables", "upstream_outputs"], message: "is what cts passes a task with cts_after (its upstream tasks' outputs). Rename the variable in the module." });
    // Checked on the raw values, so it is reported beside other problems as it always was.
    const keys = isObject(t.condition) ? Object.keys(t.condition) : [];
    if (keys.length !== 1 || !isObject(t.module_input)) return;
    const kind = KIND_OF[keys[0]!];
    for (const [key, block] of Object.entries(t.module_input))
      if (KIND_OF[key] === kind && isObject(block))
        ctx.addIssue({ code: "custom", path: ["module_input", key], message: `repeats the condition's type (${key}). Put it in the condition, or drop the module input.` });
  }, whenObject);

/** A valid task in CTS's API JSON shape. */
export type CtsTaskJson = z.output<typeof ctsTaskSchema>;
/** A valid condition: one block set. */
export type CtsConditionJson = CtsTaskJson["condition"];
/** A valid services block (condition or module input). */
export type CtsServicesJson = z.output<typeof servicesInput>;
/** A valid consul-kv block (condition or module input). */
export type CtsConsulKvJson = z.output<typeof consulKvInput>;
/** A valid nodes, intentions or config-entries block (condition or module input). */
export type CtsNodesJson = z.output<typeof nodesInput>;
export type CtsIntentionsJson = z.output<typeof intentionsInput>;
export type CtsConfigEntriesJson = z.output<typeof configEntriesInput>;
/** A valid terraform_cloud_workspace block. */
export type CtsTfcWorkspaceJson = z.output<typeof tfcWorkspaceSchema>;
/** A valid guards block. */
export type CtsGuardsJson = z.output<typeof guardsSchema>;
/** A valid buffer period block. */
export type CtsBufferPeriodJson = z.output<typeof bufferPeriodSchema>;
