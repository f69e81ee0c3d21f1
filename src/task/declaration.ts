import { CtsError } from "../errors/cts-error.ts";
import type { Condition, TaskInputs } from "./conditions.ts";
import { isModuleTask, ModuleTask, type ModuleTaskOptions } from "./module-task.ts";
import { guardSettings } from "./guards.ts";
import { className } from "./shape.ts";
import { Task, type TaskOptions, type TaskScope } from "./task.ts";

// A daemon evaluates a TypeScript config in its synthesis worker, never in the main thread: the
// config imports cdktf and provider bindings (hundreds of MB and about a second of CPU), which only
// synthesis needs. The main thread gets each task as plain data (a declaration) and rebuilds from it
// what the runtime reads: name, condition, inputs, buffer period, secrets, drift check, Terraform
// Cloud workspace settings, class name.

/** The spec of a module task, with the values its variable files held when the config loaded. */
export type ModuleTaskData = ModuleTaskOptions<Condition, TaskInputs> & { fileVariables?: Record<string, unknown> };

/** A config task as plain data (it crosses a thread boundary by structured clone). */
export type TaskDeclaration =
  | { kind: "module"; spec: ModuleTaskData }
  | { kind: "class"; className: string; options: TaskOptions<Condition, TaskInputs> };

/** Whether a task is cts's own ModuleTask (not a subclass that may build its root module differently). */
export function isPlainModuleTask(task: unknown): task is ModuleTask<Condition, TaskInputs> {
  return isModuleTask(task) && className(task) === "ModuleTask";
}

/** The plain data of a module task, enough to rebuild it on another thread. */
export function moduleTaskData(task: ModuleTask<Condition, TaskInputs>): ModuleTaskData {
  return {
    ...taskOptions(task),
    module: task.module,
    ...(task.version !== undefined ? { version: task.version } : {}),
    variables: task.variables,
    variableFiles: task.variableFiles,
    useAsModuleInput: task.useAsModuleInput,
    providers: task.providers,
    ...(task.outputs !== undefined ? { outputs: [...task.outputs] } : {}),
    ...(task.sensitiveOutputs.length ? { sensitiveOutputs: [...task.sensitiveOutputs] } : {}),
    ...(task.fileVariables !== undefined ? { fileVariables: task.fileVariables } : {}),
  };
}

/** Rebuilds a module task from its data (variable-file values included). */
export function moduleTaskFrom(data: ModuleTaskData): ModuleTask<Condition, TaskInputs> {
  const task = new ModuleTask(data);
  if (data.fileVariables !== undefined) task.fileVariables = data.fileVariables;
  return task;
}

/** Describes a loaded task as plain data. */
export function declareTask(task: Task<Condition, TaskInputs>): TaskDeclaration {
  if (isPlainModuleTask(task)) return { kind: "module", spec: moduleTaskData(task) };
  return { kind: "class", className: className(task), options: taskOptions(task) };
}

/** The task the main thread keeps for a declaration: a real ModuleTask, or a stand-in named like the class. */
export function taskFromDeclaration(d: TaskDeclaration): Task<Condition, TaskInputs> {
  if (d.kind === "module") return moduleTaskFrom(d.spec);
  // The stand-in's class carries the user's class name: the API, HA records and messages show it.
  const named = { [d.className]: class extends DeclaredTask {} }[d.className]!;
  return new named(d.options);
}

/**
 * A task class known to the main thread by its declaration only. Its resources are built by the
 * synthesis worker, which loads the config itself; calling synthesize here is a wiring defect.
 */
export class DeclaredTask extends Task<Condition, TaskInputs> {
  override synthesize(_scope: TaskScope): void {
    throw new CtsError("CTS_INTERNAL", "internal", `task '${this.name}' (${className(this)}) is synthesized by the synthesis worker, not on the daemon's main thread.`, { task: this.name });
  }
}

function taskOptions(task: Task<Condition, TaskInputs>): TaskOptions<Condition, TaskInputs> {
  return {
    name: task.name,
    description: task.description,
    enabled: task.enabled,
    condition: task.condition,
    inputs: task.inputs,
    ...(task.bufferPeriod !== undefined ? { bufferPeriod: task.bufferPeriod } : {}),
    secrets: task.secrets,
    ...(task.driftCheck !== undefined ? { driftCheck: task.driftCheck } : {}),
    ...(task.workingDir !== undefined ? { workingDir: task.workingDir } : {}),
    ...(task.terraformCloudWorkspace !== undefined ? { terraformCloudWorkspace: task.terraformCloudWorkspace } : {}),
    // A predicate cannot cross threads: the main thread keeps a flag, the worker runs it.
    ...(task.guards !== undefined ? { guards: task.guards === false ? false : (guardSettings(task.guards) as TaskOptions["guards"]) } : {}),
    ...(task.approval !== undefined ? { approval: task.approval } : {}),
    ...(task.allowEmpty === false ? { allowEmpty: false } : {}),
    ...(task.after?.length ? { after: [...task.after] } : {}),
  };
}
