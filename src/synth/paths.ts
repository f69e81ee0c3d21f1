import { isAbsolute, resolve, sep } from "node:path";
import { CtsError } from "../errors.ts";
import { taskNameProblem } from "../task/validate.ts";

/** Default root of the per-task working dirs, as in CTS. */
export const DEFAULT_WORKING_DIR = "sync-tasks";

/** The working-dir root for a config (relative paths are taken from the config file's dir). */
export function workingRoot(configDir: string, workingDir?: string): string {
  const wd = workingDir ?? DEFAULT_WORKING_DIR;
  return isAbsolute(wd) ? wd : resolve(configDir, wd);
}

/** `<root>/<task>`, refusing any task name that could leave the root. */
export function taskDir(root: string, task: string): string {
  const problem = taskNameProblem(task);
  if (problem) throw new CtsError("TASK_NAME_INVALID", "usage", `task name ${problem}`, { detail: { task } });
  const dir = resolve(root, task);
  if (!dir.startsWith(resolve(root) + sep)) throw new CtsError("TASK_NAME_INVALID", "usage", `task name '${task}' leaves the working dir.`);
  return dir;
}

/** The file where the hash of the last successfully applied JSON is kept. */
export const APPLIED_HASH_FILE = ".cts-applied-hash";
