import { randomBytes } from "node:crypto";
import { chmod, lstat, mkdir, open, readFile, rename, rm } from "node:fs/promises";
import { join } from "node:path";
import { CtsError } from "../errors.ts";
import { childPath, nameProblem, validateFileName, validateTaskName } from "./names.ts";

/** Folder mode of task working dirs (as CTS: group may read, others nothing). */
export const DIR_MODE = 0o750;
/** File mode of everything the driver writes (as CTS). */
export const FILE_MODE = 0o640;
/** The synthesized config's file name. */
export const MAIN_FILE = "main.tf.json";
/** Hash of the init inputs of the last successful init. */
export const INIT_MARKER = ".cts-init";
/** Names of the extra files written last time, so stale ones can be removed. */
const MANIFEST = ".cts-files.json";
/** Plan file of `plan`, removed after use: it may hold sensitive values. */
export const PLAN_FILE = ".cts-plan.tfplan";

/**
 * Writes a file atomically with an explicit mode: a temp file then a rename, so Terraform never
 * reads half a file and a symlink planted at the name is replaced rather than followed.
 */
export async function writeFileSafely(path: string, content: string): Promise<void> {
  const tmp = `${path}.${randomBytes(6).toString("hex")}.tmp`;
  const handle = await open(tmp, "wx", FILE_MODE);
  try {
    await handle.writeFile(content);
    // umask may have narrowed or (in odd setups) the mode must be forced: chmod explicitly.
    await handle.chmod(FILE_MODE);
  } finally {
    await handle.close();
  }
  try {
    await rename(tmp, path);
  } catch (err) {
    await rm(tmp, { force: true });
    throw err;
  }
}

/** Creates `<root>/<task>` (0750) after validating the name; refuses a symlinked task folder. */
export async function ensureTaskDir(root: string, task: string): Promise<string> {
  validateTaskName(task);
  const dir = childPath(root, task, task);
  await mkdir(root, { recursive: true, mode: DIR_MODE });
  try {
    await mkdir(dir, { mode: DIR_MODE });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
  }
  const st = await lstat(dir);
  if (!st.isDirectory()) {
    throw new CtsError("TASK_DIR_INVALID", "usage", `working directory '${dir}' is not a plain folder (a symlink or a file). Remove it and run the task again.`, {
      task,
      detail: { dir },
    });
  }
  await chmod(dir, DIR_MODE);
  return dir;
}

/**
 * Writes main.tf.json and the extra files into the task folder, and removes extra files written
 * by an earlier run that are no longer given (a stale `*.auto.tfvars.json` or `*.tf.json` would
 * still be loaded by Terraform).
 */
export async function writeTaskFiles(dir: string, task: string, json: string, files: Record<string, string> = {}): Promise<void> {
  const names = Object.keys(files).sort();
  for (const name of names) validateFileName(task, name, [MAIN_FILE]);
  await writeFileSafely(join(dir, MAIN_FILE), json);
  for (const name of names) await writeFileSafely(childPath(dir, name, task), files[name]!);
  const previous = await readManifest(dir);
  for (const old of previous) {
    if (!names.includes(old)) await rm(childPath(dir, old, task), { force: true });
  }
  if (previous.length !== names.length || previous.some((n, i) => n !== names[i])) {
    await writeFileSafely(join(dir, MANIFEST), JSON.stringify(names));
  }
}

async function readManifest(dir: string): Promise<string[]> {
  try {
    const parsed: unknown = JSON.parse(await readFile(join(dir, MANIFEST), "utf8"));
    // A hand-edited manifest must not make us delete outside the folder: keep plain names only.
    return Array.isArray(parsed) ? parsed.filter((n): n is string => typeof n === "string" && !nameProblem(n)).sort() : [];
  } catch {
    return [];
  }
}

/** The init hash of the last successful init, or undefined when none is recorded. */
export async function readInitMarker(dir: string): Promise<string | undefined> {
  try {
    return (await readFile(join(dir, INIT_MARKER), "utf8")).trim() || undefined;
  } catch {
    return undefined;
  }
}
