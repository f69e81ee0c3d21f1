import { CtsError } from "../errors/cts-error.ts";
import type { LoadedConfig } from "../config/load.ts";
import type { Condition, TaskInputs } from "../task/conditions.ts";
import { ModuleTask } from "../task/module-task.ts";
import { isPlainModuleTask, moduleTaskData } from "../task/declaration.ts";
import type { Task } from "../task/task.ts";
import { throwProblems } from "../errors/problems.ts";
import { taskProblems } from "../task/validate.ts";
import type { ModuleTaskSpec, TaskRef } from "../synth/task-ref.ts";

/**
 * The registry's record of one task: what it is and whether it is on. What else the runtime keeps
 * of a task has its own owner: its subscriptions, buffer period and timers the triggers
 * (triggers.ts, watched-data.ts), its run in progress the runs (runs.ts), and what outlives a run
 * (applied key and count, holds, events, drift findings) the task state (src/state/).
 */
export interface TaskEntry {
  name: string;
  /** The declaration (condition, inputs, buffer period, description). */
  task: Task<Condition, TaskInputs>;
  /** How the synthesizer finds it. */
  ref: TaskRef;
  /** Where it came from: the config file, or the API. */
  origin: "config" | "api";
  enabled: boolean;
  /** Set while the task is being deleted. */
  deleting?: boolean;
}

/** The entry of a task declared in the config file. */
export function configEntry(loaded: LoadedConfig, task: Task<Condition, TaskInputs>): TaskEntry {
  const ref: TaskRef = {
    kind: "config",
    configFile: loaded.file,
    name: task.name,
    ...(loaded.ctsFiles ? { configFiles: loaded.ctsFiles } : {}),
    ...(isPlainModuleTask(task) ? { module: moduleTaskData(task) } : {}),
  };
  return { name: task.name, task, ref, origin: "config", enabled: task.enabled };
}

/** The entry of a module task from the API (or a stored state); throws TASK_INVALID with every problem. */
export function moduleEntry(spec: ModuleTaskSpec, enabled?: boolean): TaskEntry {
  const task = new ModuleTask(spec);
  throwProblems(`task '${spec.name}'`, taskProblems(task), "TASK_INVALID");
  return { name: spec.name, task, ref: { kind: "module", spec }, origin: "api", enabled: enabled ?? task.enabled };
}

/** TASK_NOT_FOUND, with the command that lists tasks. */
export function notFound(name: string): CtsError {
  return new CtsError("TASK_NOT_FOUND", "usage", `no task named '${name}'. List tasks with \`cts task list\`.`);
}
