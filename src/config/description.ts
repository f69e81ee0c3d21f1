import { CtsError } from "../errors/cts-error.ts";
import { declareTask, taskFromDeclaration, type TaskDeclaration } from "../task/declaration.ts";
import type { LoadedConfig } from "./load.ts";
import type { CtsConfig } from "./types.ts";

/** A loaded config as plain data: the tasks as declarations (it crosses a thread boundary). */
export interface ConfigDescription extends Omit<LoadedConfig, "config"> {
  config: Omit<CtsConfig, "tasks"> & { tasks: TaskDeclaration[] };
}

/**
 * Describes a loaded config as plain data. Throws CONFIG_INVALID naming the setting that holds a
 * value only this thread can use (a function, a class instance with methods, a socket).
 */
export function describeConfig(loaded: LoadedConfig): ConfigDescription {
  const { tasks, ...settings } = loaded.config;
  for (const [key, value] of Object.entries(settings)) {
    try {
      structuredClone(value);
    } catch {
      throw new CtsError("CONFIG_INVALID", "usage", `${loaded.file}: '${key}' holds a value that is not plain data (a function or an object with methods?). Settings must be strings, numbers, booleans, arrays and objects.`);
    }
  }
  const declared = tasks.map((task) => {
    const d = declareTask(task);
    try {
      structuredClone(d);
    } catch {
      throw new CtsError("CONFIG_INVALID", "usage", `${loaded.file}: task '${task.name}' has options that are not plain data (a function or an object with methods in its condition, inputs, secrets or variables?). Pass strings, numbers, booleans, arrays and objects.`, { task: task.name });
    }
    return d;
  });
  return { ...loaded, config: { ...settings, tasks: declared } };
}

/** The config the daemon's main thread works with: module tasks rebuilt, task classes as stand-ins. */
export function restoreConfig(desc: ConfigDescription): LoadedConfig {
  return { ...desc, config: { ...desc.config, tasks: desc.config.tasks.map(taskFromDeclaration) } };
}
