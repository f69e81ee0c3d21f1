import type { CatalogNode, CatalogServices, ConfigEntry, Intention, KvPairs, ServiceInstance } from "./consul/types.ts";
import type { Condition, TaskInputs } from "./task/conditions.ts";
import type { AnyTaskInput, Task } from "./task/task.ts";
import { allSources } from "./task/sources.ts";
import { readFromSnapshot, type InstanceInput, type IntentionInput, type NodeInput } from "./synth/snapshot.ts";
import { synthesizeTask, type SynthContext, type SynthResult } from "./synth/synthesize.ts";
import { assertions } from "./assertions.ts";
import { keepOwnExpressions, ownExpressionsOf } from "./synth/own-expressions.ts";
import { instanceInput, intentionInput, nodeInput } from "./synth/test-input-schema.ts";
import { refuseUnknownOptions, strict, value, type ShapeOf } from "./task/strict-options.ts";
import { z } from "zod";

export type { InstanceInput, CheckInput, NodeInput, IntentionInput } from "./synth/snapshot.ts";

/** Input for tests: instances may leave out any field but `name` (CTS defaults fill the rest). */
export interface TestInput {
  /**
   * Service instances as they are in the catalog; the task sees those its condition selects. Each
   * has the checks Consul would give it: its service's (`status`, or several in `checks`;
   * `maintenance`) and its node's (a passing `serfHealth` unless `nodeStatus`/`nodeChecks` say
   * otherwise; `nodeMaintenance`). The `status` the task sees is derived from all of them.
   */
  services?: InstanceInput[];
  /** Catalog services (name → tags); the task sees those its catalog-services regexp matches. */
  catalogServices?: CatalogServices;
  /** KV pairs; the task sees the key (or the keys under the prefix) its condition or input reads. */
  kv?: KvPairs;
  /**
   * Catalog nodes (any field but `node` may be left out; default: the nodes of `services`); the
   * task sees those its nodes condition or input selects (datacenter, node meta; a filter
   * expression only with `asGiven`).
   */
  nodes?: NodeInput[];
  /**
   * Service intentions (any field but `sourceName` and `destinationName` may be left out); with a
   * `destination`, the task sees that service's and the wildcard ones, highest precedence first.
   */
  intentions?: IntentionInput[];
  /** Config entries as Consul gives them (`Kind`, `Name`, …); the task sees its kind's (and name's). */
  configEntries?: ConfigEntry[];
  /** Pass the data to the task as given, without applying its condition (default false). */
  asGiven?: boolean;
  /**
   * Task chains: the outputs of the tasks the task runs after, as `input.outputs` gives them
   * (task → output → value), e.g. `{ pool: { pool_id: "p-1" } }`. An upstream task in the task's
   * `after` that is not given reads `{}`, as before its first apply.
   */
  outputs?: Record<string, Record<string, unknown>>;
}

/** The keys of a test's input, and of its instances, checks, nodes and intentions (a typo, `tag` for `tags`, would test data Consul never holds). */
export const testInputSchema = strict({
  services: z.array(instanceInput).optional(),
  catalogServices: value(),
  kv: value(),
  nodes: z.array(nodeInput).optional(),
  intentions: z.array(intentionInput).optional(),
  configEntries: value(),
  asGiven: value(),
  outputs: value(),
} satisfies ShapeOf<TestInput>);

/**
 * The input the daemon would give the task if Consul held `input`: each of the task's sources
 * (condition first, then inputs) selects from the given data as Consul would — names or regexp,
 * passing-only, datacenter, namespace, the filter expression, KV path. Data no source reads is
 * passed through completed, so tests of tasks without conditions keep working.
 */
function taskInputOf(task: Task<Condition, TaskInputs>, input: TestInput): AnyTaskInput {
  refuseUnknownOptions(testInputSchema, input, "Testing's input");
  const all = input.services ? { services: input.services } : {};
  const out: AnyTaskInput = {};
  if (input.services) out.services = readFromSnapshot(all, { kind: "services", query: { regexp: "", passingOnly: false } }) as ServiceInstance[];
  if (input.catalogServices) out.catalogServices = input.catalogServices;
  if (input.kv) out.kv = input.kv;
  const lists = { nodes: input.nodes, intentions: input.intentions, configEntries: input.configEntries };
  if (input.nodes) out.nodes = readFromSnapshot({ nodes: input.nodes }, { kind: "nodes", query: {} }) as CatalogNode[];
  if (input.intentions) out.intentions = readFromSnapshot({ intentions: input.intentions }, { kind: "intentions", query: {} }) as Intention[];
  if (input.configEntries) out.configEntries = input.configEntries;
  const after = task.after ?? [];
  if (input.outputs || after.length) out.outputs = { ...Object.fromEntries(after.map((name) => [name, {}])), ...(input.outputs ?? {}) };
  if (input.asGiven) return out;
  for (const source of allSources(task)) {
    if (source.kind === "services" && input.services) out.services = readFromSnapshot(all, source) as ServiceInstance[];
    if (source.kind === "consul-kv" && input.kv) out.kv = readFromSnapshot({ kv: input.kv }, source) as KvPairs;
    if (source.kind === "nodes" && (input.nodes || input.services)) out.nodes = readFromSnapshot({ ...all, ...lists }, source) as CatalogNode[];
    if (source.kind === "intentions" && input.intentions) out.intentions = readFromSnapshot(lists, source) as Intention[];
    if (source.kind === "config-entries" && input.configEntries) out.configEntries = readFromSnapshot(lists, source) as ConfigEntry[];
    if (source.kind === "catalog-services") {
      if (input.catalogServices) {
        const re = new RegExp(source.query.regexp);
        out.catalogServices = Object.fromEntries(Object.entries(input.catalogServices).filter(([name]) => re.test(name)));
      } else if (input.services) out.catalogServices = readFromSnapshot(all, source) as CatalogServices;
    }
  }
  return out;
}

/** Helpers for unit-testing task classes without Consul or Terraform. */
export const Testing = {
  /**
   * Synthesizes a task over the data a Consul holding `input` would give it (its condition and
   * inputs applied, Consul filter expressions included) and returns the Terraform JSON as an object.
   */
  synthTask(task: Task<Condition, TaskInputs>, input: TestInput = {}, ctx: SynthContext = {}): Record<string, any> {
    const result = synthesizeTask(task, taskInputOf(task, input), ctx, { ownExpressions: true });
    const json = JSON.parse(result.json);
    // assertNoInterpolation tells the task's own expressions from catalog text by this record.
    const own = ownExpressionsOf(result);
    if (own) keepOwnExpressions(json, own);
    return json;
  },
  /** Like synthTask, but returns the JSON text, its hash and resource count. */
  synthTaskResult(task: Task<Condition, TaskInputs>, input: TestInput = {}, ctx: SynthContext = {}): SynthResult {
    return synthesizeTask(task, taskInputOf(task, input), ctx, { ownExpressions: true });
  },
  /** The input the task would receive for `input` (what its condition and inputs select). */
  taskInput(task: Task<Condition, TaskInputs>, input: TestInput = {}): AnyTaskInput {
    return taskInputOf(task, input);
  },
  ...assertions,
};
