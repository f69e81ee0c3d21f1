import type { TerraformStack } from "cdktf";
import type { CatalogNode, CatalogServices, ConfigEntry, Intention, KvPairs, ServiceInstance } from "../consul/types.ts";
import type { SecretSource } from "./secrets.ts";
import type { ApprovalMode, GuardSettings, PlanGuards } from "./guards.ts";
import { missingOptionsError } from "./shape.ts";
import type { Condition, ConfigEntriesCondition, ConsulKvCondition, CatalogServicesCondition, IntentionsCondition, NodesCondition, ServicesCondition, TaskInputs } from "./conditions.ts";

/** The CDKTF stack a task builds its resources in (one stack per task). */
export type TaskScope = TerraformStack;

type ConditionData<C> = C extends ServicesCondition
  ? { readonly services: ReadonlyArray<Readonly<ServiceInstance>> }
  : C extends CatalogServicesCondition
    ? { readonly catalogServices: Readonly<CatalogServices> }
    : C extends ConsulKvCondition
      ? { readonly kv: Readonly<KvPairs> }
      : C extends NodesCondition
        ? { readonly nodes: ReadonlyArray<Readonly<CatalogNode>> }
        : C extends IntentionsCondition
          ? { readonly intentions: ReadonlyArray<Readonly<Intention>> }
          : C extends ConfigEntriesCondition
            ? { readonly configEntries: ReadonlyArray<Readonly<ConfigEntry>> }
            : {};
type InputsData<I> = (I extends { services: ServicesCondition } ? { readonly services: ReadonlyArray<Readonly<ServiceInstance>> } : {}) &
  (I extends { kv: ConsulKvCondition } ? { readonly kv: Readonly<KvPairs> } : {}) &
  (I extends { nodes: NodesCondition } ? { readonly nodes: ReadonlyArray<Readonly<CatalogNode>> } : {}) &
  (I extends { intentions: IntentionsCondition } ? { readonly intentions: ReadonlyArray<Readonly<Intention>> } : {}) &
  (I extends { configEntries: ConfigEntriesCondition } ? { readonly configEntries: ReadonlyArray<Readonly<ConfigEntry>> } : {});

/**
 * The data a task receives: `services` for a services condition or input, `catalogServices` for a
 * catalog-services condition, `kv` for a consul-kv condition or input, `nodes`, `intentions` and
 * `configEntries` for those conditions or inputs. Anything else is a compile error.
 */
export type TaskInput<C extends Condition = Condition, I extends TaskInputs = {}, O extends UpstreamOutputs | undefined = undefined> = ConditionData<C> &
  InputsData<I> &
  /**
   * `outputs`: the Terraform outputs of the tasks this task runs after (`after`), by task and
   * output name: `input.outputs.pool.pool_id`. Only plain outputs flow: a sensitive one, or one
   * too large to keep, is left out; a task that has not applied yet gives `{}`. Name their types
   * with the third parameter, `TaskInput<ServicesCondition, {}, { pool: { pool_id: string } }>`,
   * and `outputs` is required; without it, it is optional (a task without `after` has none).
   */
  (O extends UpstreamOutputs ? { readonly outputs: Readonly<O> } : { readonly outputs?: Readonly<UpstreamOutputs> });

/** The outputs a task reads of its upstream tasks: task name → output name → value. */
export type UpstreamOutputs = Record<string, Record<string, unknown>>;

/** The data of any task, as the runtime passes it around. */
export interface AnyTaskInput {
  services?: ServiceInstance[];
  catalogServices?: CatalogServices;
  kv?: KvPairs;
  nodes?: CatalogNode[];
  intentions?: Intention[];
  configEntries?: ConfigEntry[];
  /** The upstream tasks' outputs (tasks with `after` only). */
  outputs?: UpstreamOutputs;
}

/** A buffer period: quiet time before a run. Durations are ms or strings like "5s", "1m30s". */
export interface BufferPeriodOption {
  /** Wait at least this long after the last change (default 5s). */
  min?: string | number;
  /** Never wait longer than this after the first change (default 20s; 4×min when only min is set). */
  max?: string | number;
}

/** Drift detection: a scheduled plan against the last applied inputs. Durations are ms or strings like "30m". */
export interface DriftCheckOption {
  /** How often to check (e.g. "30m"). */
  every: string | number;
  /** Apply when drift is found, restoring what Terraform manages (default false: report only). */
  correct?: boolean;
}

/** What every task declares. */
export interface TaskOptions<C extends Condition = Condition, I extends TaskInputs = {}> {
  /** Unique name: letters, digits, `_` and `-`, starting with a letter or `_`. Also the Terraform workspace. */
  name: string;
  /** Shown in the API and `cts synth`. */
  description?: string;
  /** Disabled tasks are not run (default true). */
  enabled?: boolean;
  /** What triggers the task. */
  condition: C;
  /** Data read at each run that does not trigger it. */
  inputs?: I;
  /** Overrides the global buffer period; `false` turns it off. */
  bufferPeriod?: BufferPeriodOption | false;
  /** Provider secrets by Terraform variable name, read at each run (use `secret(scope, name)` in synthesize). */
  secrets?: Record<string, SecretSource>;
  /** Overrides the global drift check; `false` turns it off for this task. */
  driftCheck?: DriftCheckOption | false;
  /**
   * The task's working directory, when not `<driver.terraform.workingDir>/<name>` (CTS's task
   * `working_dir`); a relative path is taken from the config file's folder. No two tasks may share one.
   */
  workingDir?: string;
  /**
   * Checks of each plan before it is applied (overrides the config's `guards`; `false` turns them
   * off). A plan that breaks one is held until `cts approve` / `cts reject`.
   */
  guards?: PlanGuards | false;
  /** `"always"`: every plan with changes waits for `cts approve` (default `"guards"`: only plans a guard refuses). */
  approval?: ApprovalMode;
  /**
   * Whether a run may apply a condition whose data dropped from some instances (or catalog
   * services, nodes, intentions, config entries) to none (default true, as CTS). `false`: such a run fails with TASK_EMPTY_REFUSED and
   * nothing is applied until the data is back or the option is turned on; empty data at a task's
   * first run is always applied. Either way the drop is logged.
   */
  allowEmpty?: boolean;
  /**
   * Task chains (CTS #329): the tasks this task runs after. A change runs them first; when one of
   * them applies, this task runs next with its new outputs (`input.outputs.<task>`); when one of
   * them fails or is held, this task's run is skipped. Names must be tasks of the same config, in
   * no circle. CTS HCL: `cts_after = ["a"]`.
   */
  after?: string[];
  /** The task's workspace settings under the Terraform Cloud driver (CTS's `terraform_cloud_workspace`); ignored by the local driver. */
  terraformCloudWorkspace?: TerraformCloudWorkspaceOption;
}

/** Settings of a task's Terraform Cloud workspace, applied when it is created or found. */
export interface TerraformCloudWorkspaceOption {
  /** "remote" (default) or "agent". */
  executionMode?: "remote" | "agent";
  /** The agent pool, by id or by name, for `executionMode: "agent"` (the id wins when both are set). */
  agentPoolId?: string;
  agentPoolName?: string;
  /** The exact Terraform version the workspace runs (e.g. "1.5.7"; default: the organization's newest). */
  terraformVersion?: string;
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
export abstract class Task<C extends Condition = Condition, I extends TaskInputs = {}> {
  /** Unique task name. */
  readonly name: string;
  /** Free-text description. */
  readonly description: string;
  /** Whether the task runs (can be changed at run time through the API). */
  enabled: boolean;
  /** What triggers the task. */
  readonly condition: C;
  /** Extra data that does not trigger the task. */
  readonly inputs: I;
  /** Per-task buffer period override. */
  readonly bufferPeriod: BufferPeriodOption | false | undefined;
  /** Provider secrets: where each value comes from at run time. */
  readonly secrets: Record<string, SecretSource>;
  /** Per-task drift check override. */
  readonly driftCheck: DriftCheckOption | false | undefined;
  /** The task's own working directory as configured (undefined: `<workingDir>/<name>`). */
  readonly workingDir: string | undefined;
  /** Workspace settings under the Terraform Cloud driver. */
  readonly terraformCloudWorkspace: TerraformCloudWorkspaceOption | undefined;
  /** Per-task plan guards (on the daemon's main thread a task class's `check` is only a flag: it runs in the synthesis worker). */
  readonly guards: PlanGuards | GuardSettings | false | undefined;
  /** Whether every plan waits for approval. */
  readonly approval: ApprovalMode | undefined;
  /** Whether data dropping to empty is applied (default true). */
  readonly allowEmpty: boolean;
  /** The tasks this task runs after (task chains); empty when none. */
  readonly after: string[];

  constructor(options: TaskOptions<C, I>) {
    // Configs are loaded without a type-check: a missing argument arrives here at run time.
    if (!options || typeof options !== "object") throw missingOptionsError(this);
    this.name = options.name;
    this.description = options.description ?? "";
    this.enabled = options.enabled ?? true;
    this.condition = options.condition;
    this.inputs = options.inputs ?? ({} as I);
    this.bufferPeriod = options.bufferPeriod;
    this.secrets = options.secrets ?? {};
    this.driftCheck = options.driftCheck;
    this.workingDir = options.workingDir;
    this.terraformCloudWorkspace = options.terraformCloudWorkspace;
    this.guards = options.guards;
    this.approval = options.approval;
    this.allowEmpty = options.allowEmpty ?? true;
    this.after = options.after ?? [];
  }

  /** Builds the task's resources in `scope` from `input`. Called on every run; must be deterministic. */
  abstract synthesize(scope: TaskScope, input: TaskInput<C, I>): void;
}

/** Structural check (no instanceof: the config may load its own copy of this module). */
export function isTask(value: unknown): value is Task<Condition, TaskInputs> {
  const v = value as Partial<Task> | null;
  return !!v && typeof v === "object" && typeof v.name === "string" && typeof v.synthesize === "function" && !!v.condition;
}
