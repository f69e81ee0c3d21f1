import { stat } from "node:fs/promises";
import { isAbsolute, resolve } from "node:path";

/** A task as a member record lists it. */
export interface MemberTask {
  name: string;
  /** The task's class (`ModuleTask` for module tasks). */
  class: string;
  /** Module source, for module tasks. */
  module?: string;
}

/** What the compatibility check compares. */
export interface CompatInput {
  /** Directory local module paths are resolved from (the config file's). */
  configDir: string;
  /** Tasks in this instance's config file. */
  ownTasks: MemberTask[];
  /** Tasks created through the API, from the stored state. */
  apiTasks: MemberTask[];
  /** The config tasks of the leader (absent when this instance leads or the leader is unknown). */
  leader?: { id: string; tasks: MemberTask[] };
}

/** Whether a module source is a local path (resolved from the config dir), as ModuleTask decides. */
export function isLocalModule(source: string): boolean {
  return source.startsWith("./") || source.startsWith("../") || isAbsolute(source);
}

/**
 * Every reason this instance could not run the cluster's tasks if it led now: a local module
 * missing here, a task of the leader's config absent from this config or of another class.
 * Messages follow CTS's `compatibility check failure: stat ./m: no such file or directory`.
 */
export async function compatProblems(input: CompatInput): Promise<string[]> {
  const problems: string[] = [];
  const own = new Map(input.ownTasks.map((t) => [t.name, t]));
  const modules = new Map<string, string[]>();
  for (const t of [...input.ownTasks, ...input.apiTasks]) {
    if (!t.module || !isLocalModule(t.module)) continue;
    modules.set(t.module, [...(modules.get(t.module) ?? []), t.name]);
  }
  for (const [module, tasks] of modules) {
    try {
      const s = await stat(resolve(input.configDir, module));
      if (!s.isDirectory()) problems.push(`module of task${tasks.length > 1 ? "s" : ""} ${tasks.map((t) => `'${t}'`).join(", ")}: ${module} is not a directory`);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      const why = code === "ENOENT" ? "no such file or directory" : code === "EACCES" ? "permission denied" : String(code ?? err);
      problems.push(`stat ${module}: ${why} (module of task${tasks.length > 1 ? "s" : ""} ${tasks.map((t) => `'${t}'`).join(", ")}; paths are relative to ${input.configDir})`);
    }
  }
  if (input.leader) {
    for (const t of input.leader.tasks) {
      const mine = own.get(t.name);
      if (!mine) problems.push(`task '${t.name}' (class ${t.class}) is in the config of leader '${input.leader.id}' but not in this instance's config`);
      else if (mine.class !== t.class) problems.push(`task '${t.name}' is class ${t.class} on leader '${input.leader.id}' but class ${mine.class} here`);
    }
  }
  return problems;
}
