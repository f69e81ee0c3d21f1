import { readFileSync } from "node:fs";
import { mkdir, rm } from "node:fs/promises";
import { join } from "node:path";
import { DIR_MODE, writeFileSafely } from "./working-dir.ts";

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
 * driver, so the next start can find what a crashed daemon left running. Writes are serialized
 * and best-effort: a failed write must never fail a Terraform run.
 */
export function createGroupFile(root: string, warn?: (line: string) => void) {
  const path = join(root, GROUPS_DIR, `${process.pid}-${++instances}.json`);
  const owner = { pid: process.pid, start: processStart(process.pid) ?? "" };
  const live = new Map<number, GroupRecord>();
  let chain: Promise<void> = Promise.resolve();
  let warned = false;
  const flush = () => {
    chain = chain
      .then(async () => {
        if (live.size === 0) return rm(path, { force: true });
        await mkdir(join(root, GROUPS_DIR), { recursive: true, mode: DIR_MODE });
        const file: GroupFile = { owner, groups: [...live.values()] };
        await writeFileSafely(path, JSON.stringify(file));
      })
      .catch((err: unknown) => {
        if (!warned) warn?.(`could not record running Terraform processes in ${path}: ${String(err)}`);
        warned = true;
      });
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
    /** Resolves once every recorded change is on disk (tests). */
    settled: () => chain,
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
