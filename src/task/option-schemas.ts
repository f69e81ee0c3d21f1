import { z } from "zod";
import type { CatalogServicesQuery, ConfigEntriesQuery, IntentionsQuery, KvQuery, NodesQuery, ServiceQueryEntry, ServicesQuery } from "../consul/types.ts";
import type {
  CatalogServicesCondition,
  ConfigEntriesCondition,
  ConsulKvCondition,
  IntentionsCondition,
  NodesCondition,
  ScheduleCondition,
  ServicesCondition,
  ServicesOptions,
  TaskInputs,
} from "./conditions.ts";
import type { CountThreshold } from "./service-trigger.ts";
import type { PlanGuards } from "./guards.ts";
import type { ModuleProvider } from "./module-providers.ts";
import type { ModuleTaskOptions } from "./module-task.ts";
import { isTemplateValue } from "./provider-templates.ts";
import type { BufferPeriodOption, DriftCheckOption, TaskOptions, TerraformCloudWorkspaceOption } from "./task.ts";
import { falseOr, strict, value, type ShapeOf } from "./strict-options.ts";

// The keys of every option object of the task model: conditions and inputs, task options and what
// nests in them, ModuleTask options. `satisfies ShapeOf<T>` keeps each in step with its type.

/** One entry of a services query's `each`. */
export const serviceQueryEntry = strict({ name: value(), datacenter: value(), namespace: value(), filter: value(), userMeta: value() } satisfies ShapeOf<ServiceQueryEntry>);
const servicesQueryShape = {
  names: value(),
  regexp: value(),
  datacenter: value(),
  namespace: value(),
  filter: value(),
  userMeta: value(),
  passingOnly: value(),
  peer: value(),
  partition: value(),
  samenessGroup: value(),
  each: z.array(serviceQueryEntry).optional(),
};
/** A services condition's or input's query. */
export const servicesQuery = strict(servicesQueryShape satisfies ShapeOf<ServicesQuery>);
/** A services condition's `trigger`: a word (its value checks say which), or a count threshold. */
export const countThreshold = strict({ above: value(), below: value() } satisfies ShapeOf<CountThreshold>);
const trigger = z.union([z.string(), countThreshold]).optional();
/** `services({...})`: the query, and for a condition its trigger. */
export const servicesOptions = strict({ ...servicesQueryShape, trigger } satisfies ShapeOf<ServicesOptions>);
/** `catalogServices({...})`. */
export const catalogServicesQuery = strict({ regexp: value(), datacenter: value(), namespace: value(), nodeMeta: value() } satisfies ShapeOf<CatalogServicesQuery>);
/** `consulKv({...})`. */
export const kvQuery = strict({ path: value(), recurse: value(), datacenter: value(), namespace: value() } satisfies ShapeOf<KvQuery>);
/** `nodes({...})`. */
export const nodesQuery = strict({ datacenter: value(), partition: value(), filter: value(), nodeMeta: value() } satisfies ShapeOf<NodesQuery>);
/** `intentions({...})`. */
export const intentionsQuery = strict({ destination: value(), datacenter: value(), namespace: value(), partition: value() } satisfies ShapeOf<IntentionsQuery>);
/** `configEntries({...})`. */
export const configEntriesQuery = strict({ kind: value(), name: value(), datacenter: value(), namespace: value(), partition: value() } satisfies ShapeOf<ConfigEntriesQuery>);
/** `schedule({...})`. */
export const scheduleOptions = strict({ cron: value() } satisfies ShapeOf<{ cron: string }>);

/** A condition object (what the factories return; written by hand, it is checked the same way). */
export const servicesCondition = strict({ kind: z.literal("services"), query: servicesQuery.optional(), trigger } satisfies ShapeOf<ServicesCondition>);
export const catalogServicesCondition = strict({ kind: z.literal("catalog-services"), query: catalogServicesQuery.optional() } satisfies ShapeOf<CatalogServicesCondition>);
export const consulKvCondition = strict({ kind: z.literal("consul-kv"), query: kvQuery.optional() } satisfies ShapeOf<ConsulKvCondition>);
export const nodesCondition = strict({ kind: z.literal("nodes"), query: nodesQuery.optional() } satisfies ShapeOf<NodesCondition>);
export const intentionsCondition = strict({ kind: z.literal("intentions"), query: intentionsQuery.optional() } satisfies ShapeOf<IntentionsCondition>);
export const configEntriesCondition = strict({ kind: z.literal("config-entries"), query: configEntriesQuery.optional() } satisfies ShapeOf<ConfigEntriesCondition>);
export const scheduleCondition = strict({ kind: z.literal("schedule"), cron: value() } satisfies ShapeOf<ScheduleCondition>);
// An unknown or missing kind is reported by the task's checks (validate.ts), with the factories to use.
const condition = z.discriminatedUnion("kind", [servicesCondition, catalogServicesCondition, consulKvCondition, nodesCondition, intentionsCondition, configEntriesCondition, scheduleCondition]);

/** A task's `inputs`. */
export const taskInputs = strict({
  services: servicesCondition.optional(),
  kv: consulKvCondition.optional(),
  nodes: nodesCondition.optional(),
  intentions: intentionsCondition.optional(),
  configEntries: configEntriesCondition.optional(),
} satisfies ShapeOf<TaskInputs>);
/** A task's (or the config's) `bufferPeriod`. */
export const bufferPeriod = strict({ min: value(), max: value() } satisfies ShapeOf<BufferPeriodOption>);
/** A task's (or the config's) `driftCheck`. */
export const driftCheck = strict({ every: value(), correct: value() } satisfies ShapeOf<DriftCheckOption>);
/** A task's (or the config's) `guards`. */
export const planGuards = strict({ maxDestroy: value(), maxDestroyPercent: value(), neverEmpty: value(), check: value() } satisfies ShapeOf<PlanGuards>);
/** A task's `terraformCloudWorkspace`. */
export const terraformCloudWorkspace = strict({
  executionMode: value(),
  agentPoolId: value(),
  agentPoolName: value(),
  terraformVersion: value(),
} satisfies ShapeOf<TerraformCloudWorkspaceOption>);
/** One of a task's `secrets`: `{ env }` or `{ file }` (a `vaultSecret()` value is cts's own object). */
export const secretSource = strict({ env: value(), file: value() } satisfies ShapeOf<{ env: string; file: string }>);

const taskShape = {
  name: value(),
  description: value(),
  enabled: value(),
  condition: condition.optional(),
  inputs: taskInputs.optional(),
  bufferPeriod: falseOr(bufferPeriod).optional(),
  secrets: z.record(z.string(), z.union([z.custom(isTemplateValue), secretSource])).optional(),
  driftCheck: falseOr(driftCheck).optional(),
  workingDir: value(),
  guards: falseOr(planGuards).optional(),
  approval: value(),
  allowEmpty: value(),
  after: value(),
  terraformCloudWorkspace: terraformCloudWorkspace.optional(),
} satisfies ShapeOf<TaskOptions>;
/** What a Task subclass passes to `super()`. */
export const taskOptions = strict(taskShape);

/** One of a ModuleTask's `providers`. */
export const moduleProvider = strict({ name: value(), config: value(), taskEnv: value(), source: value(), version: value() } satisfies ShapeOf<ModuleProvider>);
/** `new ModuleTask({...})`. */
export const moduleTaskOptions = strict({
  ...taskShape,
  module: value(),
  version: value(),
  variables: value(),
  variableFiles: value(),
  useAsModuleInput: value(),
  providers: z.array(moduleProvider).optional(),
  outputs: value(),
  sensitiveOutputs: value(),
} satisfies ShapeOf<ModuleTaskOptions<ServicesCondition, TaskInputs>>);

/** Every option object of the task model by name (the property test takes each one in turn). */
export const TASK_OPTION_SCHEMAS = {
  ServicesOptions: servicesOptions,
  ServicesQuery: servicesQuery,
  ServiceQueryEntry: serviceQueryEntry,
  CountThreshold: countThreshold,
  CatalogServicesQuery: catalogServicesQuery,
  KvQuery: kvQuery,
  NodesQuery: nodesQuery,
  IntentionsQuery: intentionsQuery,
  ConfigEntriesQuery: configEntriesQuery,
  ScheduleOptions: scheduleOptions,
  ServicesCondition: servicesCondition,
  CatalogServicesCondition: catalogServicesCondition,
  ConsulKvCondition: consulKvCondition,
  NodesCondition: nodesCondition,
  IntentionsCondition: intentionsCondition,
  ConfigEntriesCondition: configEntriesCondition,
  ScheduleCondition: scheduleCondition,
  TaskInputs: taskInputs,
  BufferPeriodOption: bufferPeriod,
  DriftCheckOption: driftCheck,
  PlanGuards: planGuards,
  TerraformCloudWorkspaceOption: terraformCloudWorkspace,
  SecretSource: secretSource,
  TaskOptions: taskOptions,
  ModuleProvider: moduleProvider,
  ModuleTaskOptions: moduleTaskOptions,
} as const;
