import { readdir } from "node:fs/promises";
import { basename, dirname, resolve } from "node:path";
import { CtsError } from "../../errors/cts-error.ts";
import type { Condition, TaskInputs } from "../../task/conditions.ts";
import type { ModuleTask } from "../../task/module-task.ts";
import { ctsConfigFiles, mergeCtsFiles, readCtsFiles } from "./files.ts";
import { mapCtsConfig, type MappedCtsConfig } from "./map.ts";

/** A CTS configuration read from `-config-file` / `-config-dir` paths and mapped onto ours. */
export interface LoadedCtsConfig extends MappedCtsConfig {
  /** Every file read, in merge order. */
  files: string[];
}

/**
 * Reads CTS config files and directories (HCL or JSON) in order, merges them with CTS's rules and
 * maps them onto cts's config. Relative paths (modules, variable files, working_dir) are taken from
 * `cwd`, as CTS takes them from its working directory.
 */
export async function readCtsConfig(paths: string[], cwd = process.cwd(), tasksFor?: "any driver"): Promise<LoadedCtsConfig> {
  if (paths.length === 0) throw new CtsError("CONFIG_NOT_FOUND", "usage", "No configuration given. Pass -config-file <file.hcl> or -config-dir <dir> (each may be repeated).");
  const files = await ctsConfigFiles(paths, cwd);
  const merged = mergeCtsFiles(await readCtsFiles(files));
  const mapped = await mapCtsConfig(merged, cwd, tasksFor);
  return { ...mapped, files };
}

/**
 * The tasks of CTS HCL/JSON config files, as ModuleTasks, for a TypeScript config that migrates
 * gradually: `tasks: [new MyTask(), ...(await fromCtsConfig("legacy/*.hcl"))]`. Accepts files,
 * directories and a `*` in the last path segment. Only tasks and the terraform_provider and
 * driver.required_providers they use are taken; other global settings stay the TypeScript config's
 * (its driver too: a task's terraform_cloud_workspace is kept for driver.terraformCloud).
 */
export async function fromCtsConfig(...patterns: string[]): Promise<Array<ModuleTask<Condition, TaskInputs>>> {
  const paths: string[] = [];
  for (const p of patterns) paths.push(...(await expandPattern(p)));
  if (paths.length === 0) throw new CtsError("CONFIG_NOT_FOUND", "usage", `fromCtsConfig(${patterns.map((p) => JSON.stringify(p)).join(", ")}): no file matches.`);
  // The TypeScript config chooses the driver: a task's terraform_cloud_workspace is checked, not refused.
  const { config } = await readCtsConfig(paths, process.cwd(), "any driver");
  return config.tasks as Array<ModuleTask<Condition, TaskInputs>>;
}

/** `dir/*.hcl` → the matching files (sorted); other paths as they are. */
async function expandPattern(pattern: string): Promise<string[]> {
  const name = basename(pattern);
  if (!name.includes("*")) return [pattern];
  if (dirname(pattern).includes("*")) throw new CtsError("CONFIG_INVALID", "usage", `fromCtsConfig("${pattern}"): '*' is only supported in the file name.`);
  const re = new RegExp(`^${name.split("*").map((s) => s.replace(/[.+?^${}()|[\]\\]/g, "\\$&")).join(".*")}$`);
  const dir = resolve(dirname(pattern));
  return (await readdir(dir)).filter((n) => re.test(n)).sort().map((n) => resolve(dir, n));
}
