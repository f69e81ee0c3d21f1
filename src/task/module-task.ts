import { isAbsolute, relative, resolve } from "node:path";
import { CONTEXT_CONFIG_DIR, CONTEXT_TASK_DIR } from "../cdktf/context.ts";
import { literalData } from "../cdktf/literal-text.ts";
import type { Condition, TaskInputs } from "./conditions.ts";
import { toCtsServices, toModuleIntentions, toModuleNodes } from "./module-protocol.ts";
import { providerEnvironment, providerJson, type ModuleProvider } from "./module-providers.ts";
import { localModuleOutputs, type ModuleOutput } from "./module-outputs.ts";
import type { TemplateLookup } from "./provider-templates.ts";
import { verbatim } from "../cdktf/cdktf-literals.ts";
import { currentCdk } from "../cdktf/load.ts";
import { Task, type TaskOptions, type TaskScope, type AnyTaskInput } from "./task.ts";

export type { ModuleProvider } from "./module-providers.ts";

/** Options of a task that calls an existing CTS-style Terraform module. */
export interface ModuleTaskOptions<C extends Condition, I extends TaskInputs> extends TaskOptions<C, I> {
  /** Module source: a local path (`./modules/x`, relative to the config file) or a registry address. */
  module: string;
  /** Module version (registry modules). */
  version?: string;
  /** Extra module variables (CTS's `variables`); values from `variableFiles` come first, these win. */
  variables?: Record<string, unknown>;
  /** `.tfvars` files read when the config loads (CTS's `variable_files`; later files win). */
  variableFiles?: string[];
  /** Whether the condition's data is passed to the module (CTS's `use_as_module_input`, default true). */
  useAsModuleInput?: boolean;
  /** Provider blocks of the root module (CTS's `terraform_provider` blocks the task lists in `providers`). */
  providers?: ModuleProvider[];
  /**
   * The module's outputs shown as the task's outputs (cts's own; CTS shows none). Default: every
   * `output` a local module declares (read from its files, `sensitive` kept); a registry or remote
   * module shows only the outputs listed here. `[]` shows none.
   */
  outputs?: string[];
  /** Outputs shown as sensitive (redacted): for a registry module, whose `sensitive = true` cts cannot read; listed ones are shown too. */
  sensitiveOutputs?: string[];
}

/** Where the root module is written from: the config dir (module sources) and the task's working dir. */
export interface ModuleJsonContext {
  configDir?: string;
  taskDir?: string;
}

/**
 * Calls an existing CTS module unchanged, as CTS's generated root module does: `module "<task>"`
 * (so existing state at `module.<task>.…` maps one to one), `services` always passed (`{}` when the
 * task has no services data), `catalog_services` and `consul_kv` when the condition or an input
 * provides them (and cts's own `nodes`, `intentions`, `config_entries`), provider blocks fed from sensitive variables, and the task's variables.
 * The root module is built as plain JSON: no CDKTF construct is involved.
 */
export class ModuleTask<C extends Condition = Condition, I extends TaskInputs = {}> extends Task<C, I> {
  /** Module source as configured. */
  readonly module: string;
  /** Module version. */
  readonly version: string | undefined;
  /** Extra variables (after the config loaded, those of the variable files included). */
  readonly variables: Record<string, unknown>;
  /** `.tfvars` files (resolved by the config loader into `variables`). */
  readonly variableFiles: string[];
  /** Whether the condition's data goes to the module. */
  readonly useAsModuleInput: boolean;
  /** Provider blocks. */
  readonly providers: ModuleProvider[];
  /** The module outputs shown as the task's outputs (undefined: every one a local module declares). */
  readonly outputs: string[] | undefined;
  /** Outputs shown as sensitive whatever the module declares. */
  readonly sensitiveOutputs: string[];
  /** Values read from the variable files, set by the config loader. */
  fileVariables: Record<string, unknown> | undefined;

  constructor(options: ModuleTaskOptions<C, I>) {
    super(options);
    this.module = options.module;
    this.version = options.version;
    this.variables = options.variables ?? {};
    this.variableFiles = options.variableFiles ?? [];
    this.useAsModuleInput = options.useAsModuleInput ?? true;
    this.providers = options.providers ?? [];
    this.outputs = options.outputs;
    this.sensitiveOutputs = options.sensitiveOutputs ?? [];
  }

  /** The root module CTS would generate for this task and input, as Terraform JSON (backend excluded). */
  terraformJson(input: AnyTaskInput, ctx: ModuleJsonContext = {}): Record<string, any> {
    const cond = this.condition.kind;
    const inputs = this.inputs as TaskInputs;
    const fromCondition = this.useAsModuleInput;
    // CTS renders `services = {}` when nothing provides services: its modules always declare the variable.
    const args: Record<string, unknown> = {
      source: moduleSource(this.module, ctx),
      ...(this.version ? { version: this.version } : {}),
      // Catalog data and variables are literal text (CTS passes them in tfvars, never evaluated).
      services: literalData((cond === "services" && fromCondition) || inputs.services ? toCtsServices(input.services ?? []) : {}),
    };
    if (cond === "catalog-services" && fromCondition) args.catalog_services = literalData(input.catalogServices ?? {});
    if ((cond === "consul-kv" && fromCondition) || inputs.kv) args.consul_kv = literalData(input.kv ?? {});
    // cts's own conditions and inputs (CTS has none): nodes, intentions, config_entries.
    if ((cond === "nodes" && fromCondition) || inputs.nodes) args.nodes = literalData(toModuleNodes(input.nodes ?? []));
    if ((cond === "intentions" && fromCondition) || inputs.intentions) args.intentions = literalData(toModuleIntentions(input.intentions ?? []));
    if ((cond === "config-entries" && fromCondition) || inputs.configEntries) args.config_entries = literalData(input.configEntries ?? []);
    // Task chains (cts's own): the upstream tasks' plain outputs, task → output → value. The module
    // declares `variable "upstream_outputs" { type = any }`.
    if (this.after.length) args.upstream_outputs = literalData(upstreamOutputsOf(this.after, input.outputs));
    Object.assign(args, literalData(this.fileVariables ?? {}), literalData(this.variables));
    const output = this.rootOutputs(ctx);
    return { ...providerJson(this.providers), module: { [this.name]: args }, ...(output ? { output } : {}) };
  }

  /**
   * The module's outputs re-exported as root outputs (`output "<name>" { value = module.<task>.<name> }`,
   * `sensitive` as the module declares it or as `sensitiveOutputs` says): Terraform keeps only a root
   * module's outputs, and the task's outputs are read from those. Outputs change nothing Terraform applies.
   */
  rootOutputs(ctx: ModuleJsonContext = {}): Record<string, { value: string; sensitive?: true }> | undefined {
    const declared = isLocalSource(this.module) ? localModuleOutputs(resolve(ctx.configDir ?? process.cwd(), this.module)) : [];
    const sensitive = new Set([...declared.filter((o: ModuleOutput) => o.sensitive).map((o) => o.name), ...this.sensitiveOutputs]);
    const names = [...new Set([...(this.outputs ?? declared.map((o) => o.name)), ...this.sensitiveOutputs])].sort();
    if (!names.length) return undefined;
    return Object.fromEntries(names.map((n) => [n, { value: `\${module.${this.name}.${n}}`, ...(sensitive.has(n) ? { sensitive: true as const } : {}) }]));
  }

  /** Environment of this task's Terraform commands: provider values (TF_VAR_<provider>) and `task_env`. */
  environment(lookup?: TemplateLookup): Record<string, string> {
    return providerEnvironment(this.providers, lookup);
  }

  /** Writes the same root module into a CDKTF stack (for `Testing` and code that calls synthesize). */
  override synthesize(scope: TaskScope, input: any): void {
    const ctx = { configDir: scope.node.tryGetContext(CONTEXT_CONFIG_DIR), taskDir: scope.node.tryGetContext(CONTEXT_TASK_DIR) };
    // Already Terraform text: cdktf (or cdktn, whichever the stack is) must write it as it is (its
    // literal marking would escape it twice).
    const lib = currentCdk();
    for (const [key, value] of Object.entries(this.terraformJson(input as AnyTaskInput, ctx))) scope.addOverride(key, verbatim(lib, value));
  }
}

/** The `upstream_outputs` variable: every upstream task listed (`{}` before its first apply), in `after`'s order. */
function upstreamOutputsOf(after: readonly string[], outputs: AnyTaskInput["outputs"]): Record<string, Record<string, unknown>> {
  return Object.fromEntries(after.map((name) => [name, outputs?.[name] ?? {}]));
}

/** Structural check for a task that builds its root module without CDKTF (the config may load its own copy). */
export function isModuleTask(task: unknown): task is ModuleTask<Condition, TaskInputs> {
  return typeof (task as Partial<ModuleTask> | null)?.terraformJson === "function";
}

/** Local sources are resolved from the config dir and written relative to the task's working dir. */
function moduleSource(source: string, ctx: ModuleJsonContext): string {
  if (!isLocalSource(source)) return source;
  const abs = resolve(ctx.configDir ?? process.cwd(), source);
  if (!ctx.taskDir) return abs;
  const rel = relative(ctx.taskDir, abs);
  return rel.startsWith("..") ? rel : `./${rel}`;
}

/** A local path (Terraform's rule: `./`, `../` or absolute), as opposed to a registry or remote address. */
function isLocalSource(source: string): boolean {
  return source.startsWith("./") || source.startsWith("../") || isAbsolute(source);
}
