import { dirname, isAbsolute, relative, resolve } from "node:path";
import type { Problem } from "../errors/problems.ts";

/** Default root of the per-task working dirs, as in CTS. */
export const DEFAULT_WORKING_DIR = "sync-tasks";

/** The working-dir root for a config (relative paths are taken from the config file's dir). */
export function workingRoot(configDir: string, workingDir?: string): string {
  const wd = workingDir ?? DEFAULT_WORKING_DIR;
  return isAbsolute(wd) ? wd : resolve(configDir, wd);
}

/** What a task contributes to where it works: its name and, maybe, its own working dir. */
export interface TaskPlace {
  name: string;
  workingDir?: string | undefined;
}

/** The task's own working dir, absolute (relative to the config's folder), or undefined when it has none. */
export function ownWorkingDir(configDir: string, task: TaskPlace): string | undefined {
  if (typeof task.workingDir !== "string" || task.workingDir.trim() === "") return undefined;
  return isAbsolute(task.workingDir) ? resolve(task.workingDir) : resolve(configDir, task.workingDir);
}

/** True when `inner` is `outer` or inside it. */
function within(inner: string, outer: string): boolean {
  const rel = relative(outer, inner);
  return rel === "" || (!rel.startsWith("..") && !isAbsolute(rel));
}

/**
 * What is wrong with where the tasks work: two tasks in one folder or one inside the other (their
 * files and `.terraform` would mix), a task's own folder that is the working root, holds it, or
 * holds the config (cts writes main.tf.json there and removes the folder when the task is deleted).
 */
export function workingDirProblems(configDir: string, root: string, tasks: TaskPlace[], configFile?: string): Problem[] {
  const problems: Problem[] = [];
  const places = tasks.map((t, i) => ({ t, i, own: ownWorkingDir(configDir, t) })).map((p) => ({ ...p, dir: p.own ?? resolve(root, p.t.name) }));
  const configHome = configFile ? dirname(resolve(configFile)) : resolve(configDir);
  for (const p of places) {
    if (!p.own) continue;
    const field = `tasks[${p.i}].workingDir`;
    if (within(resolve(root), p.own)) problems.push({ field, message: `'${p.own}' is the working root (driver.terraform.workingDir) or holds it. Give task '${p.t.name}' a folder of its own.` });
    else if (within(configHome, p.own)) problems.push({ field, message: `'${p.own}' holds the config file's folder. Give task '${p.t.name}' a folder of its own.` });
  }
  for (let a = 0; a < places.length; a++) {
    for (let b = a + 1; b < places.length; b++) {
      const [x, y] = [places[a]!, places[b]!];
      if (!x.own && !y.own) continue; // <root>/<name> folders differ when the names do (checked elsewhere)
      if (x.t.name === y.t.name) continue;
      const which = y.own ? y : x;
      const field = `tasks[${which.i}].workingDir`;
      if (x.dir === y.dir) problems.push({ field, message: `'${y.dir}' is also the working dir of task '${(which === y ? x : y).t.name}'. No two tasks may share one: give each its own folder.` });
      else if (within(x.dir, y.dir) || within(y.dir, x.dir))
        problems.push({ field, message: `task '${y.t.name}' works in '${y.dir}' and task '${x.t.name}' in '${x.dir}': one is inside the other. Give each a folder of its own, side by side.` });
    }
  }
  return problems;
}
