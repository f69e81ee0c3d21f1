import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync, readlinkSync } from "node:fs";
import os from "node:os";
import { tools } from "../../test/support/tools.ts";

/** The machine and tools a run used (the README quotes this). */
export interface MachineInfo {
  cpus: number;
  cpuModel: string;
  memoryGiB: number;
  os: string;
  node: string;
  tofu: string;
  consul: string;
  cdktf: string;
  /** 1-minute load average when the run started: other work on the machine skews results. */
  loadAtStart: number;
  /**
   * `node -e 0`, median of 5 (ms): the machine's speed that day. The same 2-core VM took 1.3 to 2.2 s
   * for the same first sync on different days; this figure says which kind of day a run had.
   */
  nodeStartMs?: number;
}

function nodeStartMs(): number {
  const times: number[] = [];
  for (let i = 0; i < 5; i++) {
    const t0 = performance.now();
    execFileSync(process.execPath, ["-e", "0"], { stdio: "ignore" });
    times.push(performance.now() - t0);
  }
  times.sort((a, b) => a - b);
  return Math.round(times[2]!);
}

function firstLine(cmd: string, args: string[], env?: Record<string, string>): string {
  try {
    return execFileSync(cmd, args, { encoding: "utf8", env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "ignore"] }).split("\n")[0]!.trim();
  } catch {
    return "unknown";
  }
}

function pkgVersion(name: string): string {
  try {
    return (JSON.parse(readFileSync(new URL(`../../node_modules/${name}/package.json`, import.meta.url), "utf8")) as { version: string }).version;
  } catch {
    return "unknown";
  }
}

/** Collects the machine description. */
export function machineInfo(): MachineInfo {
  const t = tools();
  const cpus = os.cpus();
  return {
    cpus: cpus.length,
    cpuModel: cpus[0]?.model.trim() ?? "unknown",
    memoryGiB: Math.round((os.totalmem() / 1024 ** 3) * 10) / 10,
    os: `${os.type()} ${os.release()} ${os.arch()}`,
    node: process.version,
    tofu: firstLine(t.tofu, ["version"], { TF_CLI_CONFIG_FILE: t.cliConfig, CHECKPOINT_DISABLE: "1" }),
    consul: firstLine(t.consul, ["version"]),
    cdktf: pkgVersion("cdktf"),
    loadAtStart: Math.round(os.loadavg()[0]! * 100) / 100,
    nodeStartMs: nodeStartMs(),
  };
}

/** CPU time (user + system) and memory of a process, from /proc (Linux). */
export interface ProcSample {
  /** CPU seconds used by the process itself (all its threads). */
  cpuSec: number;
  /** CPU seconds of its children that have exited and been waited for. */
  childCpuSec: number;
  rssBytes: number;
  /** Peak RSS (VmHWM). */
  peakRssBytes: number;
}

let ticks: number | undefined;
function clockTicks(): number {
  if (ticks === undefined) {
    const v = Number(firstLine("getconf", ["CLK_TCK"]));
    ticks = Number.isFinite(v) && v > 0 ? v : 100;
  }
  return ticks;
}

/** Reads /proc/<pid>/stat and /proc/<pid>/status. */
export function procSample(pid: number | "self" = "self"): ProcSample {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  // The command name may hold spaces and parentheses: the fields start after the last ')'.
  const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  // f[0] is field 3 (state); utime is field 14, stime 15, cutime 16, cstime 17.
  const n = (field: number) => Number(f[field - 3]);
  const hz = clockTicks();
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? NaN) * 1024;
  return { cpuSec: (n(14) + n(15)) / hz, childCpuSec: (n(16) + n(17)) / hz, rssBytes: kb("VmRSS"), peakRssBytes: kb("VmHWM") };
}

/** Open sockets of a process (each blocking query to Consul holds one). */
export function socketCount(pid: number): number {
  let n = 0;
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      if (readlinkSync(`/proc/${pid}/fd/${fd}`).startsWith("socket:")) n++;
    } catch {
      /* closed meanwhile */
    }
  }
  return n;
}
