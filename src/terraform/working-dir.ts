import { randomBytes } from "node:crypto";
import { chmodSync, closeSync, fchmodSync, lstatSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, writeSync } from "node:fs";
import { dirname, join } from "node:path";
import { CtsError } from "../errors.ts";
import { childPath, nameProblem, validateTaskName } from "../driver/task-name.ts";
import { validateFileName } from "./names.ts";

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
 * Plan files kept for a later apply of exactly them (plan guards, approvals), kept across restarts:
 * `.cts-kept-<random>.tfplan`, a new name per plan, so a handle never names another plan's file.
 */
export const KEPT_PLAN_FILE = /^\.cts-kept-[0-9a-f]{16}\.tfplan$/;

// The files of a run are small and local (main.tf.json, markers, manifests): they are written and
// read with synchronous calls. Each promise-based fs call costs the daemon 40-180 µs of CPU (a
// thread-pool hand-off and two thread wake-ups) against 2-10 µs for the call itself; a run makes
// dozens of them, which was a measurable share of the daemon's CPU per event (bench/lean-daemon.ts).
// The functions stay async so callers need not care.

/**
 * Writes a file atomically with an explicit mode: a temp file then a rename, so Terraform never
 * reads half a file and a symlink planted at the name is replaced rather than followed.
 */
export async function writeFileSafely(path: string, content: string): Promise<void> {
  writeFileSafelySync(path, content);
}

/** writeFileSafely, synchronously. */
export function writeFileSafelySync(path: string, content: string): void {
  const tmp = `${path}.${randomBytes(6).toString("hex")}.tmp`;
  const fd = openSync(tmp, "wx", FILE_MODE);
  try {
    const buf = Buffer.from(content, "utf8");
    for (let off = 0; off < buf.length; ) off += writeSync(fd, buf, off, buf.length - off);
    // umask may have narrowed or (in odd setups) the mode must be forced: chmod explicitly.
    fchmodSync(fd, FILE_MODE);
  } finally {
    closeSync(fd);
  }
  try {
    renameSync(tmp, path);
  } catch (err) {
    rmSync(tmp, { force: true });
    throw err;
  }
}

/**
 * Creates `<root>/<task>` (0750) after validating the name, or the task's own folder `own` (with
 * its parents) when it has one; refuses a symlinked task folder.
 */
export async function ensureTaskDir(root: string, task: string, own?: string): Promise<string> {
  validateTaskName(task);
  const dir = own ?? childPath(root, task, task);
  // The usual case, every run after the first: the folder is there, a plain folder, mode 0750.
  const seen = lstatOrUndefined(dir);
  if (seen?.isDirectory() && (seen.mode & 0o7777) === DIR_MODE) return dir;
  mkdirSync(own ? dirname(own) : root, { recursive: true, mode: DIR_MODE });
  try {
    mkdirSync(dir, { mode: DIR_MODE });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
  }
  const st = lstatSync(dir);
  if (!st.isDirectory()) {
    throw new CtsError("TASK_DIR_INVALID", "usage", `working directory '${dir}' is not a plain folder (a symlink or a file). Remove it and run the task again.`, {
      task,
      detail: { dir },
    });
  }
  chmodSync(dir, DIR_MODE);
  return dir;
}

function lstatOrUndefined(path: string) {
  try {
    return lstatSync(path);
  } catch {
    return undefined;
  }
}

/**
 * Writes main.tf.json and the extra files into the task folder, and removes extra files written
 * by an earlier run that are no longer given (a stale `*.auto.tfvars.json` or `*.tf.json` would
 * still be loaded by Terraform).
 */
export async function writeTaskFiles(dir: string, task: string, json: string, files: Record<string, string> = {}): Promise<void> {
  const names = Object.keys(files).sort();
  for (const name of names) validateFileName(task, name, [MAIN_FILE]);
  writeFileSafelySync(join(dir, MAIN_FILE), json);
  for (const name of names) writeFileSafelySync(childPath(dir, name, task), files[name]!);
  const previous = readManifest(dir);
  for (const old of previous) {
    if (!names.includes(old)) rmSync(childPath(dir, old, task), { force: true });
  }
  if (previous.length !== names.length || previous.some((n, i) => n !== names[i])) {
    writeFileSafelySync(join(dir, MANIFEST), JSON.stringify(names));
  }
}

function readManifest(dir: string): string[] {
  try {
    const parsed: unknown = JSON.parse(readFileSync(join(dir, MANIFEST), "utf8"));
    // A hand-edited manifest must not make us delete outside the folder: keep plain names only.
    return Array.isArray(parsed) ? parsed.filter((n): n is string => typeof n === "string" && !nameProblem(n)).sort() : [];
  } catch {
    return [];
  }
}

/**
 * What the last successful init recorded in a task folder: the hash of its init inputs and the
 * binary that ran it (`tofu 1.12.6`; missing in records written before cts recorded it).
 */
export interface InitRecord {
  hash: string;
  binary?: string;
}

/** The init record's text: the hash on the first line, `binary <kind> <version>` on the second. */
export function initRecordText(r: InitRecord): string {
  return r.binary ? `${r.hash}\nbinary ${r.binary}\n` : `${r.hash}\n`;
}

/** The init record of a task folder, or undefined when none is there. */
export async function readInitRecord(dir: string): Promise<InitRecord | undefined> {
  return readInitRecordSync(dir);
}

/** readInitRecord, synchronously. */
export function readInitRecordSync(dir: string): InitRecord | undefined {
  let text: string;
  try {
    text = readFileSync(join(dir, INIT_MARKER), "utf8");
  } catch {
    return undefined;
  }
  const [first, ...rest] = text.split("\n");
  const hash = first?.trim();
  if (!hash) return undefined;
  const binary = rest.map((l) => /^binary (\S+ \S+)\s*$/.exec(l)?.[1]).find(Boolean);
  return binary ? { hash, binary } : { hash };
}
