import type { Source, SourceData } from "../consul/types.ts";
import type { Condition, TaskInputs } from "./conditions.ts";
import type { AnyTaskInput, Task } from "./task.ts";

/** The inputs a task may declare (the keys of TaskInputs). */
export const INPUT_KEYS = ["services", "kv", "nodes", "intentions", "configEntries"] as const;
/** One input's key. */
export type InputKey = (typeof INPUT_KEYS)[number];

/** Where each piece of a task's input comes from. */
export interface TaskSources {
  /** The condition's source (absent for schedule tasks). */
  condition?: Source;
  /** Extra, non-triggering sources by input field. */
  inputs: Partial<Record<InputKey, Source>>;
}

/** The Consul sources a task depends on. */
export function sourcesOf(task: Task<Condition, TaskInputs>): TaskSources {
  const c = task.condition;
  const inputs: TaskSources["inputs"] = {};
  const ti = (task.inputs ?? {}) as TaskInputs;
  for (const key of INPUT_KEYS) if (ti[key]) inputs[key] = ti[key] as Source;
  return { ...(c.kind === "schedule" ? {} : { condition: c as Source }), inputs };
}

/** Every source of a task, condition first. */
export function allSources(task: Task<Condition, TaskInputs>): Source[] {
  const s = sourcesOf(task);
  return [...(s.condition ? [s.condition] : []), ...Object.values(s.inputs)];
}

/** The input field a source's data fills. */
export function fieldOf(source: Source): keyof AnyTaskInput {
  return FIELD_OF[source.kind];
}

const FIELD_OF: Record<Source["kind"], keyof AnyTaskInput> = {
  services: "services",
  "catalog-services": "catalogServices",
  "consul-kv": "kv",
  nodes: "nodes",
  intentions: "intentions",
  "config-entries": "configEntries",
};

/** Builds a task's input from the data of each of its sources. */
export async function assembleInput(task: Task<Condition, TaskInputs>, read: (source: Source) => Promise<SourceData> | SourceData): Promise<AnyTaskInput> {
  const input: AnyTaskInput = {};
  for (const source of allSources(task)) (input as Record<string, unknown>)[fieldOf(source)] = await read(source);
  return input;
}
