import { chmodSync, lstatSync, mkdirSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { inFolder, linkRefused, notAFolder, readKept, refuseLinks, removeKept, writeKept } from "../driver/safe-files.ts";
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
// The functions stay async so callers need not care. Every file is written and read through
// driver/safe-files.ts: never through a link, every failure a WORKING_DIR_UNUSABLE error.

/** The lock file `init` writes (or init-reuse copies) in a task's folder. */
export const LOCK_FILE = ".terraform.lock.hcl";

/**
 * What Terraform itself writes or reads in a task's folder and cts expects to be a file or a
 * folder of its own, never a link: Terraform follows links, so each is checked before it runs and
 * a link there is named (a planted lock-file link made every later `init` fail with an error that
 * did not mention it). The provider package links deep under `.terraform/providers` are init's
 * (or init-reuse's) own and are not looked at.
 */
export const TERRAFORM_PATHS = [LOCK_FILE, ".terraform", ".terraform/terraform.tfstate", ".terraform/environment", ".terraform/providers", ".terraform/modules", PLAN_FILE];

/** Every path of a task's folder cts writes or reads by a fixed name (the extra files a task gives are named by the task). */
export const TASK_DIR_PATHS = [MAIN_FILE, MANIFEST, INIT_MARKER, ...TERRAFORM_PATHS];

/**
 * Creates `<root>/<task>` (0750) after validating the name, or the task's own folder `own` (with
 * its parents) when it has one; refuses a task folder that is a link or a file (WORKING_DIR_UNUSABLE).
 */
export async function ensureTaskDir(root: string, task: string, own?: string): Promise<string> {
  validateTaskName(task);
  const dir = own ?? childPath(root, task, task);
  // The usual case, every run after the first: the folder is there, a plain folder, mode 0750.
  const seen = lstatOrUndefined(dir);
  if (seen?.isDirectory() && (seen.mode & 0o7777) === DIR_MODE) return dir;
  if (seen?.isSymbolicLink()) throw linkRefused(dir, task);
  if (seen && !seen.isDirectory()) throw notAFolder(dir, task);
  const parent = own ? dirname(own) : root;
  inFolder("make the folder", parent, task, () => mkdirSync(parent, { recursive: true, mode: DIR_MODE }));
  inFolder("make the folder", dir, task, () => {
    try {
      mkdirSync(dir, { mode: DIR_MODE });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    }
  });
  const st = lstatSync(dir);
  if (st.isSymbolicLink()) throw linkRefused(dir, task);
  if (!st.isDirectory()) throw notAFolder(dir, task);
  inFolder("set the mode of", dir, task, () => chmodSync(dir, DIR_MODE));
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
 * still be loaded by Terraform). Then checks that neither the init record nor anything Terraform
 * writes or reads there is a link (TERRAFORM_PATHS), so a planted one is named before Terraform runs.
 */
export async function writeTaskFiles(dir: string, task: string, json: string, files: Record<string, string> = {}): Promise<void> {
  const names = Object.keys(files).sort();
  for (const name of names) validateFileName(task, name, [MAIN_FILE]);
  writeKept(dir, MAIN_FILE, json, task, FILE_MODE);
  for (const name of names) writeKept(dir, basename(childPath(dir, name, task)), files[name]!, task, FILE_MODE);
  const previous = readManifest(dir, task);
  for (const old of previous) {
    if (!names.includes(old)) removeKept(dir, basename(childPath(dir, old, task)), task);
  }
  if (previous.length !== names.length || previous.some((n, i) => n !== names[i])) {
    writeKept(dir, MANIFEST, JSON.stringify(names), task, FILE_MODE);
  }
  refuseLinks(dir, [INIT_MARKER, ...TERRAFORM_PATHS], task);
}

function readManifest(dir: string, task: string): string[] {
  const text = readKept(join(dir, MANIFEST), task);
  if (text === undefined) return [];
  try {
    const parsed: unknown = JSON.parse(text);
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

/** The init record of a task folder, or undefined when none is there (a link there is refused). */
export async function readInitRecord(dir: string, task?: string): Promise<InitRecord | undefined> {
  return readInitRecordSync(dir, task);
}

/** readInitRecord, synchronously. */
export function readInitRecordSync(dir: string, task?: string): InitRecord | undefined {
  const text = readKept(join(dir, INIT_MARKER), task);
  if (text === undefined) return undefined;
  const [first, ...rest] = text.split("\n");
  const hash = first?.trim();
  if (!hash) return undefined;
  const binary = rest.map((l) => /^binary (\S+ \S+)\s*$/.exec(l)?.[1]).find(Boolean);
  return binary ? { hash, binary } : { hash };
}

/** Records the init in a task folder (the hash of its inputs, the binary), written safely. */
export function writeInitRecord(dir: string, record: InitRecord, task?: string): void {
  writeKept(dir, INIT_MARKER, initRecordText(record), task, FILE_MODE);
}
