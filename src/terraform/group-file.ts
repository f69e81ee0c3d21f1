import { mkdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { DIR_MODE, writeFileSafelySync } from "./working-dir.ts";

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
 * driver, so the next start can find what a crashed daemon left running. Writes are synchronous
 * (the record is on disk before the command's output is read; a small local file, and no
 * thread-pool round trips twice per command) and best-effort: a failed write must never fail a
 * Terraform run.
 */
export function createGroupFile(root: string, warn?: (line: string) => void) {
  const path = join(root, GROUPS_DIR, `${process.pid}-${++instances}.json`);
  const owner = { pid: process.pid, start: processStart(process.pid) ?? "" };
  const live = new Map<number, GroupRecord>();
  let warned = false;
  let dirMade = false;
  const flush = () => {
    try {
      if (live.size === 0) return rmSync(path, { force: true });
      const file: GroupFile = { owner, groups: [...live.values()] };
      const write = () => writeFileSafelySync(path, JSON.stringify(file));
      if (!dirMade) mkdirSync(join(root, GROUPS_DIR), { recursive: true, mode: DIR_MODE });
      try {
        write();
      } catch (err) {
        // The folder was removed meanwhile (a clean-up, a test): make it again once.
        if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
        mkdirSync(join(root, GROUPS_DIR), { recursive: true, mode: DIR_MODE });
        write();
      }
      dirMade = true;
    } catch (err) {
      if (!warned) warn?.(`could not record running Terraform processes in ${path}: ${String(err)}`);
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
