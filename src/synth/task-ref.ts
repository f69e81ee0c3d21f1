import type { Condition, TaskInputs } from "../task/conditions.ts";
import type { ModuleTaskData } from "../task/declaration.ts";
import type { ModuleTaskOptions } from "../task/module-task.ts";

/** Plain-data description of a module task (API-created tasks are these). */
export type ModuleTaskSpec = ModuleTaskOptions<Condition, TaskInputs>;

/**
 * How a synthesizer finds a task without sharing objects across threads: a task class from the
 * config file (looked up by name), or a module task from its plain-data spec. A config task that is
 * a plain ModuleTask also carries its data (`module`): it is built where it is needed, without the
 * config or CDKTF.
 */
export type TaskRef =
  | { kind: "config"; configFile: string; name: string; /** A CTS config's files, in merge order. */ configFiles?: string[]; module?: ModuleTaskData }
  | { kind: "module"; spec: ModuleTaskSpec };

/** Whether `ref` is a task class: synthesized where the config's code runs (the worker), not built as plain JSON. */
export function isTaskClassRef(ref: TaskRef): boolean {
  return ref.kind === "config" && ref.module === undefined;
}
