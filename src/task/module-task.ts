import { TerraformHclModule } from "cdktf";
import { isAbsolute, relative, resolve } from "node:path";
import { CONTEXT_CONFIG_DIR, CONTEXT_TASK_DIR } from "../synth/context.ts";
import type { Condition, TaskInputs } from "./conditions.ts";
import { toCtsServices } from "./cts-protocol.ts";
import { Task, type TaskOptions, type TaskScope, type AnyTaskInput } from "./task.ts";

/** Options of a task that calls an existing CTS-style Terraform module. */
export interface ModuleTaskOptions<C extends Condition, I extends TaskInputs> extends TaskOptions<C, I> {
  /** Module source: a local path (`./modules/x`, relative to the config file) or a registry address. */
  module: string;
  /** Module version (registry modules). */
  version?: string;
  /** Extra module variables (CTS's `variable_files` / `variables`). */
  variables?: Record<string, unknown>;
}

/**
 * Calls an existing CTS module unchanged: the module block is named after the task (CTS's
 * `module.<task>` address, so existing state maps one to one) and receives `services`,
 * `catalog_services` and `consul_kv` in CTS's protocol-v0 shape, as the condition and inputs provide.
 */
export class ModuleTask<C extends Condition = Condition, I extends TaskInputs = {}> extends Task<C, I> {
  /** Module source as configured. */
  readonly module: string;
  /** Module version. */
  readonly version: string | undefined;
  /** Extra variables. */
  readonly variables: Record<string, unknown>;

  constructor(options: ModuleTaskOptions<C, I>) {
    super(options);
    this.module = options.module;
    this.version = options.version;
    this.variables = options.variables ?? {};
  }

  /** Writes one module block with the CTS variables. */
  override synthesize(scope: TaskScope, input: any): void {
    const data = input as AnyTaskInput;
    const variables: Record<string, unknown> = { ...this.variables };
    if (data.services !== undefined) variables.services = toCtsServices(data.services);
    if (data.catalogServices !== undefined) variables.catalog_services = data.catalogServices;
    if (data.kv !== undefined) variables.consul_kv = data.kv;
    new TerraformHclModule(scope, this.name, {
      source: moduleSource(this.module, scope),
      ...(this.version ? { version: this.version } : {}),
      variables,
      skipAssetCreationFromLocalModules: true,
    });
  }
}

/** Local sources are resolved from the config dir and written relative to the task's working dir. */
function moduleSource(source: string, scope: TaskScope): string {
  const isLocal = source.startsWith("./") || source.startsWith("../") || isAbsolute(source);
  if (!isLocal) return source;
  const configDir: string | undefined = scope.node.tryGetContext(CONTEXT_CONFIG_DIR);
  const taskDir: string | undefined = scope.node.tryGetContext(CONTEXT_TASK_DIR);
  const abs = resolve(configDir ?? process.cwd(), source);
  if (!taskDir) return abs;
  const rel = relative(taskDir, abs);
  return rel.startsWith("..") ? rel : `./${rel}`;
}
