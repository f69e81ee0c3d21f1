import { randomBytes } from "node:crypto";
import { closeSync, constants, lstatSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, writeSync } from "node:fs";
import { dirname, join } from "node:path";
import { CtsError } from "../errors.ts";

/**
 * Files cts keeps in a folder of its own, written and read without following a link: a link
 * planted in a working dir (by a module, a catalog-driven template, another user) never makes cts
 * write or read outside it. Every failure is a WORKING_DIR_UNUSABLE error that names the folder,
 * the cause and the fix.
 */

/** The fix for a failed file operation in `dir`, by the system's error code. */
function fixFor(code: string | undefined, dir: string): string {
  switch (code) {
    case "ENOSPC":
    case "EDQUOT":
      return `free space on the filesystem that holds ${dir} (df -h ${dir})`;
    case "EROFS":
      return `${dir} is on a read-only mount: mount it read-write, or point the working dir at a writable filesystem`;
    case "EACCES":
    case "EPERM":
      return `let the user cts runs as write there (chown or chmod ${dir}), or point the working dir elsewhere`;
    case "ELOOP":
    case "ENOTDIR":
      return `remove the symbolic link (cts never writes through one); cts makes the file again`;
    default:
      return `check that cts may create and write files in ${dir}`;
  }
}

/** WORKING_DIR_UNUSABLE: what failed, where, why and the fix. */
export function folderError(what: string, path: string, err: unknown, task?: string): CtsError {
  const code = (err as NodeJS.ErrnoException)?.code;
  const cause = err instanceof Error ? err.message : String(err);
  const dir = dirname(path);
  return new CtsError("WORKING_DIR_UNUSABLE", "external", `cannot ${what} ${path} (${cause}): ${fixFor(code, dir)}.`, {
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

/** Makes `dir` (with its parents) unless it exists; refuses a folder that is a link. */
export function ownFolder(dir: string, task?: string): void {
  try {
    if (lstatSync(dir).isSymbolicLink()) throw linkRefused(dir, task);
    return;
  } catch (err) {
    if (err instanceof CtsError) throw err;
    if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw folderError("use the folder", dir, err, task);
  }
  try {
    mkdirSync(dir, { recursive: true, mode: 0o750 });
  } catch (err) {
    throw folderError("make the folder", dir, err, task);
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
 * renamed over the old one): a crash leaves the old file or the new one, never half of either.
 */
export function writeKept(dir: string, name: string, text: string, task?: string): void {
  ownFolder(dir, task);
  const path = join(dir, name);
  refuseLink(path, task);
  const tmp = join(dir, `.${name}.${randomBytes(4).toString("hex")}.tmp`);
  let fd: number | undefined;
  try {
    fd = openSync(tmp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o640);
    writeSync(fd, text);
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
    return readFileSync(fd, "utf8");
  } finally {
    closeSync(fd);
  }
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
  try {
    rmSync(path, { force: true });
  } catch (err) {
    throw folderError("remove", path, err, task);
  }
}
