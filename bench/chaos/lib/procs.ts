/**
 * Finding the processes a scenario left behind by scanning /proc (Linux): a process belongs to a
 * scenario when its working directory or its command line lies under the scenario's folder. The
 * tofu binary path alone is not enough: other tofu users on the machine share it.
 */
import { readdirSync, readFileSync, readlinkSync } from "node:fs";

/** One running process found under a folder. */
export interface FoundProcess {
  pid: number;
  ppid: number;
  /** tofu, provider (terraform-provider-*), sh/sleep (a local-exec), consul, node (cts), other. */
  kind: string;
  /** The command line, shortened. */
  cmd: string;
}

function read(path: string): string | undefined {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return undefined;
  }
}

function kindOf(argv: string[]): string {
  const exe = argv[0] ?? "";
  const base = exe.slice(exe.lastIndexOf("/") + 1);
  if (base.startsWith("terraform-provider-")) return "provider";
  if (base === "tofu" || base === "terraform") return "tofu";
  if (base === "consul") return "consul";
  if (base === "node" || exe === process.execPath) return "node";
  if (base === "sh" || base === "bash" || base === "sleep") return "local-exec";
  return base || "other";
}

/** Live (not zombie) processes whose cwd or command line is under `root`, except `exclude`. */
export function processesUnder(root: string, exclude: number[] = []): FoundProcess[] {
  const skip = new Set([process.pid, ...exclude]);
  const out: FoundProcess[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    const pid = Number(name);
    if (skip.has(pid)) continue;
    const stat = read(`/proc/${pid}/stat`);
    if (!stat) continue;
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    if (fields[0] === "Z" || fields[0] === "X") continue;
    const argv = (read(`/proc/${pid}/cmdline`) ?? "").split("\0").filter(Boolean);
    let cwd = "";
    try {
      cwd = readlinkSync(`/proc/${pid}/cwd`);
    } catch {
      /* gone meanwhile, or not ours to read */
    }
    const cmd = argv.join(" ");
    if (!(cwd === root || cwd.startsWith(root + "/") || cmd.includes(root))) continue;
    out.push({ pid, ppid: Number(fields[1]), kind: kindOf(argv), cmd: cmd.length > 160 ? cmd.slice(0, 157) + "…" : cmd });
  }
  return out;
}

/** "2 tofu, 1 provider" (or "none"). */
export function describe(procs: FoundProcess[]): string {
  if (procs.length === 0) return "none";
  const by = new Map<string, number>();
  for (const p of procs) by.set(p.kind, (by.get(p.kind) ?? 0) + 1);
  return [...by].map(([k, n]) => `${n} ${k}`).join(", ");
}

/** SIGKILLs each process by its id (only ever called with processes found under our own folder). */
export function killAll(procs: FoundProcess[]): number {
  let n = 0;
  for (const p of procs) {
    try {
      process.kill(p.pid, "SIGKILL");
      n++;
    } catch {
      /* already gone */
    }
  }
  return n;
}

/** Whether a process is still alive (and not a zombie). */
export function alive(pid: number): boolean {
  const stat = read(`/proc/${pid}/stat`);
  if (!stat) return false;
  const state = stat.slice(stat.lastIndexOf(")") + 2).split(" ")[0];
  return state !== "Z" && state !== "X";
}

/** Pid of the `consul agent` whose config file sets this HTTP port (the dev agent of test/support/consul.ts). */
export function consulPid(port: number): number | undefined {
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    const argv = (read(`/proc/${name}/cmdline`) ?? "").split("\0");
    if (!argv[0]?.endsWith("/consul") || argv[1] !== "agent") continue;
    const cfg = argv[argv.indexOf("-config-file") + 1];
    if (cfg && new RegExp(`\\bhttp = ${port}\\b`).test(read(cfg) ?? "") && alive(Number(name))) return Number(name);
  }
  return undefined;
}
