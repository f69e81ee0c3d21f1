import type { Condition, TaskInputs } from "../task/conditions.ts";
import type { ModuleTaskOptions } from "../task/module-task.ts";

/** Plain-data description of a module task (API-created tasks are these). */
export type ModuleTaskSpec = ModuleTaskOptions<Condition, TaskInputs>;

/**
 * How a synthesizer finds a task without sharing objects across threads: a task class from the
 * config file (looked up by name), or a module task from its plain-data spec.
 */
export type TaskRef = { kind: "config"; configFile: string; name: string; /** A CTS config's files, in merge order. */ configFiles?: string[] } | { kind: "module"; spec: ModuleTaskSpec };
