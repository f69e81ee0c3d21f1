import { randomBytes } from "node:crypto";
import { closeSync, constants, fchmodSync, fstatSync, lstatSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, writeSync } from "node:fs";
import { dirname, join } from "node:path";
import { CtsError } from "../errors/cts-error.ts";

/**
 * Files cts keeps in a folder of its own (a task's working dir, its task state), written and read
 * without following a link: a link planted in a working dir (by a module, a catalog-driven
 * template, another user) never makes cts write or read outside it. Every failure is a
 * WORKING_DIR_UNUSABLE error that names the folder, the cause and the fix.
 */

/** Mode of the folders cts makes (as CTS: group may read, others nothing). */
const DIR_MODE = 0o750;
/** Mode of the files cts writes, unless the caller keeps another (as CTS). */
const FILE_MODE = 0o640;

/** The system error codes that say the folder itself is unusable (space, mount, permissions, a link). */
const FOLDER_CODES = new Set(["ENOSPC", "EDQUOT", "EROFS", "EACCES", "EPERM", "ELOOP", "ENOTDIR"]);

/** True for a system error that means the folder cannot be used as it is (not a missing file). */
export function isFolderFault(err: unknown): boolean {
  return FOLDER_CODES.has((err as NodeJS.ErrnoException)?.code ?? "");
}

/** The fix for a failed file operation in `dir`, by the system's error code. */
export function folderFix(code: string | undefined, dir: string): string {
  switch (code) {
    case "ENOSPC":
    case "EDQUOT":
      return `free space on the filesystem that holds ${dir} (df -h ${dir})`;
    case "EROFS":
      return `${dir} is on a read-only mount: mount it read-write, or move the working dir to a writable filesystem (the task's workingDir option, or driver.terraform.workingDir)`;
    case "EACCES":
    case "EPERM":
      return `let the user cts runs as write there (chown or chmod ${dir}), or move the working dir (the task's workingDir option, or driver.terraform.workingDir)`;
    case "ELOOP":
      return `remove the symbolic link (cts never writes through one); cts makes the file again`;
    case "ENOTDIR":
      return `a file is where a folder belongs on the path to ${dir}: remove or move it`;
    default:
      return `check that cts may create and write files in ${dir}`;
  }
}

/** WORKING_DIR_UNUSABLE: what failed, where, why and the fix. */
export function folderError(what: string, path: string, err: unknown, task?: string): CtsError {
  if (err instanceof CtsError) return err;
  const code = (err as NodeJS.ErrnoException)?.code;
  const cause = err instanceof Error ? err.message : String(err);
  const dir = dirname(path);
  return new CtsError("WORKING_DIR_UNUSABLE", "external", `cannot ${what} ${path} (${cause}): ${folderFix(code, dir)}.`, {
    ...(task ? { task } : {}),
    cause: err,
    detail: { path, ...(code ? { errno: code } : {}) },
  });
}

/** A symbolic link where cts keeps a file or folder: refused, naming it. */
export function linkRefused(path: string, task?: string): CtsError {
  return new CtsError("WORKING_DIR_UNUSABLE", "external", `${path} is a symbolic link; cts does not write or read through links in its folders: remove the link (cts makes the file again).`, {
    ...(task ? { task } : {}),
    detail: { path, errno: "ELOOP" },
  });
}

/** Something other than a folder (a file) where cts keeps a folder: refused, naming it. */
export function notAFolder(path: string, task?: string): CtsError {
  return new CtsError("WORKING_DIR_UNUSABLE", "external", `${path} is not a folder (a file is there); cts keeps a folder at that path: remove or move the file.`, {
    ...(task ? { task } : {}),
    detail: { path, errno: "ENOTDIR" },
  });
}

/** Runs one file operation on `path`; a system error becomes WORKING_DIR_UNUSABLE saying `what` failed. */
export function inFolder<T>(what: string, path: string, task: string | undefined, step: () => T): T {
  try {
    return step();
  } catch (err) {
    throw folderError(what, path, err, task);
  }
}

/** Makes `dir` (with its parents) unless it exists; refuses a folder that is a link or a file. */
export function ownFolder(dir: string, task?: string): void {
  try {
    const st = lstatSync(dir);
    if (st.isSymbolicLink()) throw linkRefused(dir, task);
    if (!st.isDirectory()) throw notAFolder(dir, task);
    return;
  } catch (err) {
    if (err instanceof CtsError) throw err;
    if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw folderError("use the folder", dir, err, task);
  }
  inFolder("make the folder", dir, task, () => mkdirSync(dir, { recursive: true, mode: DIR_MODE }));
}

/**
 * Refuses a symbolic link at any of `names` (paths under `dir`, each part checked: `.terraform`
 * before `.terraform/environment`). A missing path is fine. This is the check before Terraform runs
 * in a folder: Terraform itself follows links, so a link it would write through is named here.
 */
export function refuseLinks(dir: string, names: readonly string[], task?: string): void {
  for (const name of names) {
    let path = dir;
    for (const part of name.split("/")) {
      path = join(path, part);
      let st;
      try {
        st = lstatSync(path);
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code === "ENOENT" || code === "ENOTDIR") break;
        throw folderError("check", path, err, task);
      }
      if (st.isSymbolicLink()) throw linkRefused(path, task);
    }
  }
}

/** A file at `path` that is a link: refused. (A missing file is fine.) */
function refuseLink(path: string, task?: string): void {
  try {
    if (lstatSync(path).isSymbolicLink()) throw linkRefused(path, task);
  } catch (err) {
    if (err instanceof CtsError) throw err;
  }
}

/**
 * Writes `text` to `dir/name` at once (a new temp file, opened without following links, then
 * renamed over the old one): a crash leaves the old file or the new one, never half of either, and
 * Terraform never reads half a file. A link at `dir/name` is refused, never replaced or followed.
 * `mode` is set on the file whatever the umask (default 0640).
 */
export function writeKept(dir: string, name: string, text: string, task?: string, mode = FILE_MODE): void {
  ownFolder(dir, task);
  const path = join(dir, name);
  refuseLink(path, task);
  const tmp = join(dir, `.${name}.${randomBytes(4).toString("hex")}.tmp`);
  let fd: number | undefined;
  try {
    fd = openSync(tmp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, mode);
    const buf = Buffer.from(text, "utf8");
    for (let off = 0; off < buf.length; ) off += writeSync(fd, buf, off, buf.length - off);
    fchmodSync(fd, mode);
    closeSync(fd);
    fd = undefined;
    renameSync(tmp, path);
  } catch (err) {
    if (fd !== undefined) closeSync(fd);
    rmSync(tmp, { force: true });
    throw folderError("write", path, err, task);
  }
}

/** The text of `path`, or undefined when there is none; a link there is refused. */
export function readKept(path: string, task?: string): string | undefined {
  return readKeptFile(path, task)?.text;
}

/** The text and mode of the plain file at `path`, or undefined when there is none; a link there is refused. */
export function readKeptFile(path: string, task?: string): { text: string; mode: number } | undefined {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "ENOENT" || code === "ENOTDIR") return undefined;
    if (code === "ELOOP") throw linkRefused(path, task);
    throw folderError("read", path, err, task);
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) throw notAFile(path, task);
    return { text: readFileSync(fd, "utf8"), mode: st.mode & 0o777 };
  } catch (err) {
    throw folderError("read", path, err, task);
  } finally {
    closeSync(fd);
  }
}

function notAFile(path: string, task?: string): CtsError {
  return new CtsError("WORKING_DIR_UNUSABLE", "external", `${path} is not a plain file (a folder or a device is there); cts keeps a file at that path: remove it (cts makes the file again).`, {
    ...(task ? { task } : {}),
    detail: { path },
  });
}

/** Removes `dir/name` (a link there is removed, never followed); a folder that is a link is refused. */
export function removeKept(dir: string, name: string, task?: string): void {
  try {
    if (lstatSync(dir).isSymbolicLink()) throw linkRefused(dir, task);
  } catch (err) {
    if (err instanceof CtsError) throw err;
    return; // no folder: nothing to remove
  }
  const path = join(dir, name);
  inFolder("remove", path, task, () => rmSync(path, { force: true }));
}
