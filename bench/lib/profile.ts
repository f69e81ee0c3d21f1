import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { ProfileSummary } from "./types.ts";

interface CpuProfile {
  nodes: Array<{ id: number; callFrame: { functionName: string; url: string; lineNumber: number }; hitCount?: number }>;
  samples?: number[];
  timeDeltas?: number[];
  startTime: number;
  endTime: number;
}

const ROOT = new URL("../../", import.meta.url).pathname;

/** Which package or part of cts a script URL belongs to. */
function areaOf(url: string, fn: string): string {
  if (!url) return fn.startsWith("(") ? fn : "(native/V8)";
  if (url.startsWith("node:")) return "node internals";
  const path = url.replace(/^file:\/\//, "");
  const nm = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(path);
  if (nm) return nm[1]!;
  const rel = path.startsWith(ROOT) ? path.slice(ROOT.length) : path;
  const m = /^(src\/[^/]+|bench|test)\//.exec(rel);
  return m ? m[1]! : rel;
}

function shortWhere(url: string, line: number): string {
  if (!url) return "";
  let path = url.replace(/^file:\/\//, "");
  if (path.startsWith(ROOT)) path = path.slice(ROOT.length);
  path = path.replace(/^.*node_modules\//, "");
  return `${path}:${line + 1}`;
}

/**
 * Summarizes every `.cpuprofile` in `dir` (the main thread and worker threads together): self
 * time per function and per package, largest first. Idle time is left out of the percentages.
 * With `windowUs`, only samples taken inside it count (same clock as process.hrtime).
 */
export function summarizeProfiles(dir: string, what: string, windowUs?: [number, number], top = 15): ProfileSummary | undefined {
  let files: string[];
  try {
    files = readdirSync(dir).filter((f) => f.endsWith(".cpuprofile"));
  } catch {
    return undefined;
  }
  if (files.length === 0) return undefined;
  const byFn = new Map<string, { fn: string; where: string; self: number }>();
  const byArea = new Map<string, number>();
  let total = 0;
  for (const f of files) {
    const prof = JSON.parse(readFileSync(join(dir, f), "utf8")) as CpuProfile;
    const nodes = new Map(prof.nodes.map((n) => [n.id, n]));
    const samples = prof.samples ?? [];
    const deltas = prof.timeDeltas ?? [];
    let at = prof.startTime;
    for (let i = 0; i < samples.length; i++) {
      at += deltas[i] ?? 0;
      if (windowUs && (at < windowUs[0] || at > windowUs[1])) continue;
      const node = nodes.get(samples[i]!);
      if (!node) continue;
      // Each delta is the time since the previous sample: charge it to the sample it ends at.
      const dt = Math.max(0, deltas[i + 1] ?? 0) / 1000;
      const { functionName, url, lineNumber } = node.callFrame;
      const fn = functionName || "(anonymous)";
      if (fn === "(idle)") continue;
      total += dt;
      const key = `${fn}\0${url}\0${lineNumber}`;
      const entry = byFn.get(key) ?? { fn, where: shortWhere(url, lineNumber), self: 0 };
      entry.self += dt;
      byFn.set(key, entry);
      const area = areaOf(url, fn);
      byArea.set(area, (byArea.get(area) ?? 0) + dt);
    }
  }
  const pct = (x: number) => Math.round((x / (total || 1)) * 1000) / 10;
  return {
    what,
    totalMs: Math.round(total),
    top: [...byFn.values()]
      .sort((a, b) => b.self - a.self)
      .slice(0, top)
      .map((e) => ({ fn: e.fn, where: e.where, selfMs: Math.round(e.self), selfPct: pct(e.self) })),
    byArea: [...byArea.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 12)
      .map(([area, self]) => ({ area, selfMs: Math.round(self), selfPct: pct(self) })),
  };
}
