import * as conditions from "./conditions.ts";
import type {
  CatalogServicesCondition,
  Condition,
  ConfigEntriesCondition,
  ConsulKvCondition,
  IntentionsCondition,
  NodesCondition,
  ScheduleCondition,
  ServicesCondition,
  ServicesOptions,
  TaskInputs,
} from "./conditions.ts";
import type { CatalogServicesQuery, ConfigEntriesQuery, IntentionsQuery, KvQuery, NodesQuery } from "../consul/types.ts";
import { ModuleTask as BaseModuleTask, type ModuleTaskOptions } from "./module-task.ts";
import {
  catalogServicesQuery,
  configEntriesQuery,
  intentionsQuery,
  kvQuery,
  moduleTaskOptions,
  nodesQuery,
  scheduleOptions,
  servicesOptions,
  taskOptions,
} from "./option-schemas.ts";
import { refuseUnknownOptions } from "./strict-options.ts";
import { Task as BaseTask, type TaskOptions } from "./task.ts";

// The task model as src/index.ts exports it to configs and task files: each factory and
// constructor refuses an option key it does not take (OPTION_UNKNOWN, naming the caller's line),
// because tsx loads those files without a type-check. cts's own code builds tasks from data already
// checked (the daemon's main thread, the API, CTS HCL configs) with the classes of task.ts and
// module-task.ts, which do not load zod.

/** A services condition or input: `names` or `regexp`, passing instances only by default; a condition may set `trigger`. */
export function services(options: ServicesOptions): ServicesCondition {
  refuseUnknownOptions(servicesOptions, options, "services()");
  return conditions.services(options);
}

/** A catalog-services condition: `regexp: ""` watches every service name. */
export function catalogServices(query: Partial<CatalogServicesQuery> = {}): CatalogServicesCondition {
  refuseUnknownOptions(catalogServicesQuery, query, "catalogServices()");
  return conditions.catalogServices(query);
}

/** A consul-kv condition or input: one key, or every key under `path` with `recurse`. */
export function consulKv(query: KvQuery): ConsulKvCondition {
  refuseUnknownOptions(kvQuery, query, "consulKv()");
  return conditions.consulKv(query);
}

/** A nodes condition or input: every node of the datacenter, or those `filter` and `nodeMeta` select. */
export function nodes(query: NodesQuery = {}): NodesCondition {
  refuseUnknownOptions(nodesQuery, query, "nodes()");
  return conditions.nodes(query);
}

/** An intentions condition or input: `destination`'s intentions in the order Consul evaluates them, or every intention. */
export function intentions(query: IntentionsQuery = {}): IntentionsCondition {
  refuseUnknownOptions(intentionsQuery, query, "intentions()");
  return conditions.intentions(query);
}

/** A config-entries condition or input: every entry of `kind`, or the one named `name`. */
export function configEntries(query: ConfigEntriesQuery): ConfigEntriesCondition {
  refuseUnknownOptions(configEntriesQuery, query, "configEntries()");
  return conditions.configEntries(query);
}

/** A schedule condition: `cron` with 5, 6 (seconds) or 7 (seconds and year) fields. */
export function schedule(opts: { cron: string }): ScheduleCondition {
  refuseUnknownOptions(scheduleOptions, opts, "schedule()");
  return conditions.schedule(opts);
}

/** How a task's options are named in a message: its name when it has one, and its class. */
function taskWhat(options: { name?: unknown }, cls: string): string {
  return typeof options.name === "string" && options.name !== "" ? `Task '${options.name.slice(0, 60)}' (class ${cls})` : `Task class ${cls}`;
}

/**
 * A task: declares what it watches and builds Terraform resources from the data with CDKTF.
 *
 * ```ts
 * class WebPool extends Task<ServicesCondition> {
 *   constructor() { super({ name: "web-pool", condition: services({ names: ["web"] }) }); }
 *   synthesize(scope: TaskScope, input: TaskInput<ServicesCondition>) { … }
 * }
 * ```
 */
export abstract class Task<C extends Condition = Condition, I extends TaskInputs = {}> extends BaseTask<C, I> {
  constructor(options: TaskOptions<C, I>) {
    if (options && typeof options === "object") refuseUnknownOptions(taskOptions, options, taskWhat(options, new.target.name || "an anonymous class"));
    super(options);
  }

  /** `x instanceof Task` holds for every task, those cts builds from checked data too; a subclass keeps the usual test. */
  static override [Symbol.hasInstance](value: unknown): boolean {
    return this === Task ? value instanceof BaseTask : Function.prototype[Symbol.hasInstance].call(this, value);
  }
}

/**
 * Calls an existing CTS module unchanged, as CTS's generated root module does (see the ModuleTask
 * of module-task.ts); its options are checked as the task's are.
 */
export class ModuleTask<C extends Condition = Condition, I extends TaskInputs = {}> extends BaseModuleTask<C, I> {
  constructor(options: ModuleTaskOptions<C, I>) {
    if (options && typeof options === "object") refuseUnknownOptions(moduleTaskOptions, options, taskWhat(options, new.target.name || "ModuleTask"));
    super(options);
  }

  /** `x instanceof ModuleTask` holds for the module tasks of a CTS config too (built without this check); a subclass keeps the usual test. */
  static override [Symbol.hasInstance](value: unknown): boolean {
    return this === ModuleTask ? value instanceof BaseModuleTask : Function.prototype[Symbol.hasInstance].call(this, value);
  }
}
