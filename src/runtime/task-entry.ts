import { CtsError } from "../errors/cts-error.ts";
import type { LoadedConfig } from "../config/load.ts";
import type { Condition, TaskInputs } from "../task/conditions.ts";
import { ModuleTask } from "../task/module-task.ts";
import { isPlainModuleTask, moduleTaskData } from "../task/declaration.ts";
import type { Task } from "../task/task.ts";
import { throwProblems } from "../errors/problems.ts";
import { taskProblems } from "../task/validate.ts";
import type { ModuleTaskSpec, TaskRef } from "../synth/task-ref.ts";
import type { Subscription } from "../watch/types.ts";
import type { BufferPeriod } from "../watch/buffer.ts";
import type { Source } from "../consul/types.ts";
import type { DriftResult } from "./drift.ts";

/** The runtime's record of one task. */
export interface TaskEntry {
  name: string;
  /** The declaration (condition, inputs, buffer period, description). */
  task: Task<Condition, TaskInputs>;
  /** How the synthesizer finds it. */
  ref: TaskRef;
  /** Where it came from: the config file, or the API. */
  origin: "config" | "api";
  enabled: boolean;
  /** Live subscriptions while watching, by input field. */
  subs: Array<{ field: "services" | "catalogServices" | "kv"; source: Source; sub: Subscription }>;
  /** Ends the task's hold on the template values its providers read (daemon mode). */
  templateSub?: () => void;
  buffer?: BufferPeriod;
  /** Stops the cron schedule (while watching). */
  cronTimer?: () => void;
  /** Stops the drift check timer (while watching). */
  driftTimer?: () => void;
  /** The last drift check's finding. */
  lastDrift?: DriftResult;
  /** Cancels the run in progress (and its retry waits). */
  abort?: AbortController;
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
  return { name: task.name, task, ref, origin: "config", enabled: task.enabled, subs: [] };
}

/** The entry of a module task from the API (or a stored state); throws TASK_INVALID with every problem. */
export function moduleEntry(spec: ModuleTaskSpec, enabled?: boolean): TaskEntry {
  const task = new ModuleTask(spec);
  throwProblems(`task '${spec.name}'`, taskProblems(task), "TASK_INVALID");
  return { name: spec.name, task, ref: { kind: "module", spec }, origin: "api", enabled: enabled ?? task.enabled, subs: [] };
}

/** TASK_NOT_FOUND, with the command that lists tasks. */
export function notFound(name: string): CtsError {
  return new CtsError("TASK_NOT_FOUND", "usage", `no task named '${name}'. List tasks with \`cts task list\`.`);
}
