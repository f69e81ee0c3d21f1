/**
 * Watching a scenario from outside: what the daemon logged (runs, failed attempts), what it
 * applied (the file a task writes), and its memory.
 */
import { readFileSync } from "node:fs";
import type { DaemonProcess } from "../../lib/daemon-process.ts";
import { alive } from "./procs.ts";
import { sleep } from "../../lib/stats.ts";

/** Log patterns of the daemon (src/runtime/controller.ts). */
const PATTERNS = {
  /** A run that ended well: Terraform applied, or the JSON was unchanged. */
  runs: /task '[^']+': (applied|no-op)\b/,
  /** A run that failed after its retries (or a fatal watch error). */
  failedRuns: /\[ERROR\].*task '[^']+': /,
  /** A failed attempt a retry then hid. */
  retried: /task '[^']+': attempt \d+ failed, retrying/,
  /** Consul could not be read (the watch retries). */
  watchWarnings: /task '[^']+': watching Consul: /,
  errorLines: /\[ERROR\]/,
  warnLines: /\[WARN\]/,
};

/** Counts of the daemon's log lines since the tally started. */
export type LogCounts = Record<keyof typeof PATTERNS, number>;

/** Starts counting at once (counters only see lines printed after their first use). */
export function tally(d: DaemonProcess): { counts(): LogCounts } {
  const counts = () => Object.fromEntries(Object.entries(PATTERNS).map(([k, re]) => [k, d.count(re)])) as LogCounts;
  counts();
  return { counts };
}

/** Difference of two tallies. */
export function since(now: LogCounts, before: LogCounts): LogCounts {
  return Object.fromEntries(Object.entries(now).map(([k, v]) => [k, v - before[k as keyof LogCounts]])) as LogCounts;
}

/** Failed attempts in all: runs that failed plus attempts a retry hid. */
export const failedAttempts = (c: LogCounts) => c.failedRuns + c.retried;

/** A log line without what varies between occurrences (task names, delays, ids, paths). */
function normalize(line: string): string {
  return line
    .replace(/^\S+ /, "")
    .replace(/[Tt]ask '[^']+'/g, (m) => `${m[0]}ask '…'`)
    .replace(/\d+ ms/g, "N ms")
    .replace(/attempt \d+/, "attempt N")
    .replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, "<id>")
    .replace(/\.terraform\/providers\/\S+?(?=:|\s|$)/g, "<provider dir>")
    .replace(/127\.0\.0\.1:\d+/g, "127.0.0.1:<port>");
}

/** Distinct error and warning messages in the daemon's (bounded) log, with counts, most frequent first. */
export function errorSamples(lines: string[], max = 5, width = 220): string[] {
  const by = new Map<string, number>();
  for (const l of lines) {
    if (!/\[(ERROR|WARN)\]/.test(l)) continue;
    const msg = normalize(l).slice(0, width);
    by.set(msg, (by.get(msg) ?? 0) + 1);
  }
  return [...by].sort((a, b) => b[1] - a[1]).slice(0, max).map(([m, n]) => `${n}× ${m}`);
}

/** The cause of a failed attempt in a few words: what Terraform said after "failed (exit N): ". */
export function errorKinds(lines: string[]): string[] {
  const by = new Map<string, number>();
  for (const l of lines) {
    if (!/\[(ERROR|WARN)\].*(attempt \d+ failed|task '[^']+': )/.test(l)) continue;
    const n = normalize(l);
    const cause = (/`tofu ([a-z]+)[^`]*` failed \(exit \d+\): (.*)$/.exec(n) ?? [])
      .slice(1)
      .join(": ");
    const kind = (cause || n.replace(/^.*?task '…': /, "")).replace(/\s*Fix the task's configuration.*$/, "").slice(0, 120);
    by.set(kind, (by.get(kind) ?? 0) + 1);
  }
  return [...by].sort((a, b) => b[1] - a[1]).map(([k, n]) => `${n}× ${k}`);
}

/** Sorted non-empty lines of a file ("" when missing). */
export function linesOf(path: string): string[] {
  try {
    return readFileSync(path, "utf8").split("\n").filter(Boolean).sort();
  } catch {
    return [];
  }
}

const same = (a: string[], b: string[]) => a.length === b.length && a.every((x, i) => x === b[i]);

/**
 * Polls until the file holds exactly `expected` (as sorted lines) and keeps holding it for
 * `stableMs`. Returns when it first matched (performance.now()), or throws with what it held.
 */
export async function waitForFile(path: string, expected: string[], o: { timeoutMs: number; stableMs?: number; pid?: number; onPoll?: (lines: string[]) => void }): Promise<number> {
  const want = [...expected].sort();
  const stable = o.stableMs ?? 0;
  const deadline = performance.now() + o.timeoutMs;
  let since: number | undefined;
  for (;;) {
    const now = performance.now();
    const got = linesOf(path);
    o.onPoll?.(got);
    if (same(got, want)) {
      since ??= now;
      if (now - since >= stable) return since;
    } else since = undefined;
    if (o.pid !== undefined && !alive(o.pid)) throw new Error(`the daemon (pid ${o.pid}) died while waiting for ${path}`);
    if (now > deadline) {
      const missing = want.filter((l) => !got.includes(l)).length;
      const extra = got.filter((l) => !want.includes(l)).length;
      throw new Error(`${path} did not converge within ${Math.round(o.timeoutMs / 1000)} s: it holds ${got.length} lines, ${missing} expected lines missing, ${extra} unexpected`);
    }
    await sleep(50);
  }
}

/** Samples a process's RSS every `everyMs` until stopped; min and max in bytes. */
export function rssSampler(pid: number, everyMs = 250) {
  let min = Infinity;
  let max = 0;
  let n = 0;
  const take = () => {
    try {
      const status = readFileSync(`/proc/${pid}/status`, "utf8");
      const rss = Number(/^VmRSS:\s+(\d+) kB/m.exec(status)?.[1] ?? NaN) * 1024;
      if (Number.isFinite(rss)) {
        min = Math.min(min, rss);
        max = Math.max(max, rss);
        n++;
      }
    } catch {
      /* the process ended */
    }
  };
  take();
  const timer = setInterval(take, everyMs);
  return {
    stop: () => {
      clearInterval(timer);
      take();
      return { min, max, samples: n };
    },
  };
}

/** "212–388 MB". */
export const mbRange = (r: { min: number; max: number }) => (Number.isFinite(r.min) ? `${Math.round(r.min / 2 ** 20)}–${Math.round(r.max / 2 ** 20)} MB` : "–");
/** "1.23 s". */
export const secs = (msec: number) => (Number.isFinite(msec) ? `${(msec / 1000).toFixed(msec < 10_000 ? 2 : 1)} s` : "–");

/**
 * Waits until the daemon's counts stop moving for `quietMs` (at most `maxMs`): a run that wrote
 * its file logs its outcome only after Terraform exits, so counts read at once would miss it.
 */
export async function quiesce(t: { counts(): LogCounts }, quietMs = 2_000, maxMs = 30_000): Promise<LogCounts> {
  const end = performance.now() + maxMs;
  let last = JSON.stringify(t.counts());
  let since = performance.now();
  while (performance.now() < end) {
    await sleep(200);
    const now = JSON.stringify(t.counts());
    if (now !== last) {
      last = now;
      since = performance.now();
    } else if (performance.now() - since >= quietMs) break;
  }
  return t.counts();
}
