import { closeSync, constants, fchmodSync, fstatSync, openSync, readFileSync, rmSync, writeSync } from "node:fs";
import { join } from "node:path";
import { ownFolder } from "../driver/safe-files.ts";
import { FILE_MODE } from "./working-dir.ts";

/** Folder under the working dir where each driver records the process groups it runs. */
export const GROUPS_DIR = ".cts-processes";

/** One Terraform command cts started, as recorded on disk. */
export interface GroupRecord {
  pgid: number;
  task: string;
  command: string;
}

/** What one driver instance wrote: who it was and what it was running. */
export interface GroupFile {
  owner: { pid: number; start: string };
  groups: GroupRecord[];
}

/** The start time of a process (field 22 of /proc/<pid>/stat), so a reused pid is not mistaken for the owner. */
export function processStart(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // The command name (field 2) may hold spaces and parentheses: count fields after the last ')'.
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19];
  } catch {
    return undefined;
  }
}

let instances = 0;

/**
 * Keeps `<workingDir>/.cts-processes/<pid>-<n>.json` up to date with the live process groups of one
 * driver, so the next start can find what a crashed daemon left running. The file is opened once and
 * rewritten in place by a single write at offset 0, never truncated: a shorter record is padded with
 * spaces (valid JSON), so a crash at any moment leaves a whole record. That is two system calls per
 * Terraform command where a temp file and a rename took six (bench/lean-daemon.ts). Synchronous (the
 * record is on disk before the command's output is read) and best-effort: a failed write must never
 * fail a Terraform run. An idle driver's file lists no groups; `close()` removes it.
 */
export function createGroupFile(root: string, warn?: (line: string) => void) {
  const dir = join(root, GROUPS_DIR);
  const path = join(dir, `${process.pid}-${++instances}.json`);
  const owner = { pid: process.pid, start: processStart(process.pid) ?? "" };
  const live = new Map<number, GroupRecord>();
  let warned = false;
  let fd: number | undefined;
  let length = 0;
  const reopen = () => {
    if (fd !== undefined) closeSync(fd);
    fd = undefined;
    // A folder that is a link is refused (the warning names it), never written through.
    ownFolder(dir);
    // O_NOFOLLOW: a symlink planted at the name is refused, never followed.
    fd = openSync(path, constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC | constants.O_NOFOLLOW, FILE_MODE);
    fchmodSync(fd, FILE_MODE);
    length = 0;
  };
  const flush = () => {
    try {
      // Opened on the first command; again when the file was removed meanwhile (a clean-up, a test).
      if (fd === undefined || fstatSync(fd).nlink === 0) reopen();
      const file: GroupFile = { owner, groups: [...live.values()] };
      const buf = Buffer.from(JSON.stringify(file).padEnd(length, " "), "utf8");
      writeSync(fd!, buf, 0, buf.length, 0);
      length = Math.max(length, buf.length);
    } catch (err) {
      if (!warned) warn?.(`could not record running Terraform processes in ${path}: ${err instanceof Error ? err.message : String(err)}`);
      warned = true;
    }
  };
  return {
    path,
    add(rec: GroupRecord): void {
      live.set(rec.pgid, rec);
      flush();
    },
    remove(pgid: number): void {
      if (live.delete(pgid)) flush();
    },
    /** Closes the file and removes it when nothing recorded is running any more (the driver stopped). */
    close(): void {
      if (fd !== undefined) closeSync(fd);
      fd = undefined;
      if (live.size === 0) rmSync(path, { force: true });
    },
    /** Resolves once every recorded change is on disk (tests; writes are synchronous now). */
    settled: (): Promise<void> => Promise.resolve(),
  };
}

/** The records of a group file, or undefined when it is unreadable. */
export function parseGroupFile(text: string): GroupFile | undefined {
  try {
    const v = JSON.parse(text) as GroupFile;
    if (typeof v?.owner?.pid !== "number" || !Array.isArray(v.groups)) return undefined;
    const groups = v.groups.filter((g) => Number.isInteger(g?.pgid) && g.pgid > 1);
    return { owner: { pid: v.owner.pid, start: String(v.owner.start ?? "") }, groups };
  } catch {
    return undefined;
  }
}
