import { randomBytes } from "node:crypto";
import { lstatSync, statfsSync } from "node:fs";
import { dirname } from "node:path";
import { folderFix, refuseLinks, removeKept, writeKept } from "../driver/safe-files.ts";
import { CtsError, messageOf } from "../errors/cts-error.ts";
import { TASK_DIR_PATHS } from "../terraform/working-dir.ts";
import { fail, pass, type CheckResult } from "./check.ts";

/**
 * Free space below this fails a task folder's check: without a plugin cache, `init` puts every
 * provider (tens to hundreds of MB each) into the folder's `.terraform`.
 */
export const MIN_FREE_BYTES = 256 * 1024 * 1024;

/** What the check asks of the filesystem (tests give a full or read-only one). */
export interface FolderProbe {
  /** Bytes an unprivileged user may still write on the filesystem holding `dir`. */
  freeBytes(dir: string): number;
  /** Writes and removes a probe file in `dir`, as cts writes its files there. */
  writeProbe(dir: string, task: string): void;
}

const realProbe: FolderProbe = {
  freeBytes(dir) {
    const st = statfsSync(dir);
    return st.bavail * st.bsize;
  },
  writeProbe(dir, task) {
    const name = `.cts-doctor-${randomBytes(4).toString("hex")}`;
    writeKept(dir, name, "cts doctor probe", task);
    removeKept(dir, name, task);
  },
};

const mb = (bytes: number) => `${Math.floor(bytes / (1024 * 1024))} MB`;

/** The folder itself when it exists, else the nearest folder above it that does (where cts would make it). */
function existingFolder(dir: string): string {
  let at = dir;
  while (lstatSync(at, { throwIfNoEntry: false }) === undefined && dirname(at) !== at) at = dirname(at);
  return at;
}

/**
 * A task's own working folder (`<workingDir>/<task>`, or its `workingDir`) as a run needs it: there
 * or possible to make, a folder and not a link, nothing cts or Terraform uses in it a link,
 * writable, with free space; a failure names the folder, the cause and the fix as a run's
 * WORKING_DIR_UNUSABLE error would.
 */
export function checkTaskFolder(task: string, dir: string, probe: FolderProbe = realProbe, minFreeBytes = MIN_FREE_BYTES): CheckResult {
  const r = folderCheck(task, dir, probe, minFreeBytes);
  // A run fails on such a folder with WORKING_DIR_UNUSABLE: the check names the code docs/errors.md lists.
  return r.ok ? r : { ...r, fix: `${r.fix} (a run fails with WORKING_DIR_UNUSABLE)` };
}

function folderCheck(task: string, dir: string, probe: FolderProbe, minFreeBytes: number): CheckResult {
  const name = `task-dir:${task}`;
  try {
    const st = lstatSync(dir, { throwIfNoEntry: false });
    if (st?.isSymbolicLink())
      return fail(name, `${dir} is a symbolic link; cts does not work through links in a task's folder`, `remove the link and let cts make the folder, or set the task's workingDir to the folder it points at`);
    if (st && !st.isDirectory()) return fail(name, `${dir} is a file, not a folder`, "remove or move the file; cts makes the folder");
    // Made read-only on purpose (chmod a-w): root would write there all the same, against that intent.
    if (st && (st.mode & 0o222) === 0)
      return fail(name, `${dir} is read-only (mode ${(st.mode & 0o777).toString(8).padStart(4, "0")}): cts keeps the task's Terraform files there and writes them at every run`, "make it writable for the user cts runs as (chmod u+w), or give the task a working dir of its own that is (its workingDir option)");
    const at = st ? dir : existingFolder(dirname(dir));
    if (st) refuseLinks(dir, TASK_DIR_PATHS, task);
    probe.writeProbe(at, task);
    const free = probe.freeBytes(at);
    if (free < minFreeBytes) return fail(name, `only ${mb(free)} free on the filesystem that holds ${dir} (a run's init may need more than ${mb(minFreeBytes)})`, folderFix("ENOSPC", at));
    return pass(name, `${dir} ${st ? "is a writable folder" : `can be made (in ${at})`}, ${mb(free)} free`);
  } catch (err) {
    const path = err instanceof CtsError ? String(err.detail.path ?? dir) : dir;
    const errno = err instanceof CtsError ? (err.detail.errno as string | undefined) : (err as NodeJS.ErrnoException).code;
    if (errno === "ELOOP") return fail(name, `${path} is a symbolic link; cts does not write or read through links in a task's folder`, "remove the link; cts makes the file again");
    const cause = err instanceof CtsError && err.cause instanceof Error ? err.cause.message : messageOf(err);
    return fail(name, `cannot write in ${dir}: ${cause}`, folderFix(errno, err instanceof CtsError ? dirname(path) : dir));
  }
}

/** The check of every task's own folder. */
export function checkTaskFolders(dirs: Array<{ task: string; dir: string }>, probe?: FolderProbe): CheckResult[] {
  return dirs.map(({ task, dir }) => checkTaskFolder(task, dir, probe));
}
