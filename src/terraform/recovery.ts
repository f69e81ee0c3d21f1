import { lstatSync } from "node:fs";
import { readdir, readFile, readlink, rm } from "node:fs/promises";
import { join, sep } from "node:path";
import { readKept } from "../driver/safe-files.ts";
import { GROUPS_DIR, parseGroupFile, processStart, type GroupRecord } from "./group-file.ts";
import { PLAN_FILE } from "./working-dir.ts";
import { signalGroup } from "./process.ts";

/** The members of a process group that work inside one of `roots` (their cwd is a task folder). */
async function membersUnder(pgid: number, roots: string[]): Promise<number[]> {
  const found: number[] = [];
  for (const name of await readdir("/proc").catch(() => [] as string[])) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = await readFile(`/proc/${name}/stat`, "utf8");
      const pgrp = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[2]);
      if (pgrp !== pgid) continue;
      const cwd = await readlink(`/proc/${name}/cwd`);
      if (roots.some((root) => cwd === root || cwd.startsWith(root + sep))) found.push(Number(name));
    } catch {
      /* gone meanwhile, or not ours to read */
    }
  }
  return found;
}

/** True when `path` is a symbolic link. */
function isLink(path: string): boolean {
  return lstatSync(path, { throwIfNoEntry: false })?.isSymbolicLink() ?? false;
}

/** A record's text, read without following a link; "" for anything unreadable. */
function readOrEmpty(path: string): string {
  try {
    return readKept(path) ?? "";
  } catch {
    return "";
  }
}

const alive = (owner: { pid: number; start: string }) => owner.start !== "" && processStart(owner.pid) === owner.start;

/**
 * Cleans up what a crashed daemon left in the working dir: Terraform and provider processes of the
 * groups it recorded (SIGINT, so Terraform saves state and releases the lock; SIGKILL after the
 * grace period) and plan files (they may hold secrets). Files of a driver that is still running
 * (this process included) are left alone, and so are plan files while one is. `ownDirs` are the
 * folders of tasks that work elsewhere than `<root>/<task>` (name → folder). Never throws.
 */
export async function recoverWorkingDir(root: string, graceMs: number, log: (line: string) => void, ownDirs: Record<string, string> = {}): Promise<void> {
  const roots = [root, ...Object.values(ownDirs)];
  const dir = join(root, GROUPS_DIR);
  // Nothing is read or removed through a link: a folder or record that is one is left alone.
  const names = isLink(dir) ? [] : await readdir(dir).catch(() => [] as string[]);
  let otherOwnerLive = false;
  const stale: GroupRecord[] = [];
  for (const name of names.filter((n) => n.endsWith(".json"))) {
    const file = parseGroupFile(readOrEmpty(join(dir, name)));
    if (file && alive(file.owner)) {
      // A running driver that is running nothing right now keeps an empty record.
      if (file.groups.length > 0) otherOwnerLive = true;
      continue;
    }
    if (file) stale.push(...file.groups);
    await rm(join(dir, name), { force: true });
  }
  const killed: GroupRecord[] = [];
  for (const g of stale) {
    const members = await membersUnder(g.pgid, roots);
    if (members.length === 0) continue;
    log(`a previous run left \`${g.command}\` of task '${g.task}' running (process group ${g.pgid}, ${members.length} processes); stopping it`);
    signalGroup(g.pgid, "SIGINT");
    killed.push(g);
  }
  const deadline = Date.now() + graceMs;
  while (killed.length && Date.now() < deadline) {
    const left = await Promise.all(killed.map((g) => membersUnder(g.pgid, roots)));
    if (left.every((m) => m.length === 0)) break;
    await new Promise((r) => setTimeout(r, 200));
  }
  for (const g of killed) {
    if ((await membersUnder(g.pgid, roots)).length) {
      log(`process group ${g.pgid} ignored SIGINT for ${graceMs} ms; killing it`);
      signalGroup(g.pgid, "SIGKILL");
    }
  }
  if (otherOwnerLive) return;
  const folders: Array<[string, string]> = (await readdir(root).catch(() => [] as string[])).filter((t) => !t.startsWith(".")).map((t) => [t, join(root, t)]);
  for (const [task, folder] of [...folders, ...Object.entries(ownDirs)]) {
    if (isLink(folder)) continue;
    const plan = join(folder, PLAN_FILE);
    try {
      await rm(plan);
      log(`removed the plan file a previous run left in '${task}'`);
    } catch {
      /* none */
    }
  }
}
