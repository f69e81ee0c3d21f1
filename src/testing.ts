import type { CatalogServices, KvPairs, ServiceInstance } from "./consul/types.ts";
import type { Condition, TaskInputs } from "./task/conditions.ts";
import type { Task } from "./task/task.ts";
import { readFromSnapshot } from "./synth/snapshot.ts";
import { synthesizeTask, type SynthContext, type SynthResult } from "./synth/synthesize.ts";

/** Input for tests: instances may leave out any field but `name` (CTS defaults fill the rest). */
export interface TestInput {
  services?: Array<Partial<ServiceInstance> & { name: string }>;
  catalogServices?: CatalogServices;
  kv?: KvPairs;
}

function complete(input: TestInput): { services?: ServiceInstance[]; catalogServices?: CatalogServices; kv?: KvPairs } {
  const out: { services?: ServiceInstance[]; catalogServices?: CatalogServices; kv?: KvPairs } = {};
  if (input.services) out.services = readFromSnapshot({ services: input.services }, { kind: "services", query: { regexp: "", passingOnly: false } }) as ServiceInstance[];
  if (input.catalogServices) out.catalogServices = input.catalogServices;
  if (input.kv) out.kv = input.kv;
  return out;
}

/** Helpers for unit-testing task classes without Consul or Terraform. */
export const Testing = {
  /** Synthesizes a task with the given data and returns the Terraform JSON as an object. */
  synthTask(task: Task<Condition, TaskInputs>, input: TestInput = {}, ctx: SynthContext = {}): Record<string, any> {
    return JSON.parse(synthesizeTask(task, complete(input), ctx).json);
  },
  /** Like synthTask, but returns the JSON text, its hash and resource count. */
  synthTaskResult(task: Task<Condition, TaskInputs>, input: TestInput = {}, ctx: SynthContext = {}): SynthResult {
    return synthesizeTask(task, complete(input), ctx);
  },
};
