import { resolve, sep } from "node:path";
import { ownWorkingDir, type TaskPlace } from "../config/working-dirs.ts";
import { CtsError } from "../errors/cts-error.ts";
import { taskNameProblem } from "../task/validate.ts";

export { DEFAULT_WORKING_DIR, workingRoot } from "../config/working-dirs.ts";

/** `<root>/<task>`, refusing any task name that could leave the root. */
export function taskDir(root: string, task: string): string {
  const problem = taskNameProblem(task);
  if (problem) throw new CtsError("TASK_NAME_INVALID", "usage", `task name ${problem}`, { detail: { task } });
  const dir = resolve(root, task);
  if (!dir.startsWith(resolve(root) + sep)) throw new CtsError("TASK_NAME_INVALID", "usage", `task name '${task}' leaves the working dir.`);
  return dir;
}

/** Where a config's task works: its own `workingDir` (relative to the config's folder), else `<root>/<task>`. */
export function taskWorkingDir(root: string, configDir: string, task: TaskPlace): string {
  return ownWorkingDir(configDir, task) ?? taskDir(root, task.name);
}

/** The own working dirs of a config's tasks (name → absolute folder), for the driver. */
export function ownWorkingDirs(configDir: string, tasks: TaskPlace[]): Record<string, string> {
  const dirs: Record<string, string> = {};
  for (const t of tasks) {
    const own = ownWorkingDir(configDir, t);
    if (own) dirs[t.name] = own;
  }
  return dirs;
}
