import type { MachineInfo } from "./machine.ts";
import type { BenchResult, ResultTable, Sizes } from "./types.ts";

/** Everything written to latest.json. */
export interface RunReport {
  date: string;
  command: string;
  quick: boolean;
  totalSeconds: number;
  machine: MachineInfo;
  sizes: Sizes;
  results: BenchResult[];
}

const cell = (v: string | number) => String(v).replace(/\|/g, "\\|").replace(/\n/g, " ");

/** A markdown table. */
export function table(t: ResultTable): string {
  const out: string[] = [];
  if (t.title) out.push(`**${t.title}**`, "");
  out.push(`| ${t.columns.map(cell).join(" | ")} |`);
  out.push(`|${t.columns.map((_, i) => (i === 0 ? "---" : "---:")).join("|")}|`);
  for (const r of t.rows) out.push(`| ${r.map(cell).join(" | ")} |`);
  if (t.notes?.length) out.push("", ...t.notes.map((n) => `_${n}_`));
  return out.join("\n");
}

const mark = (met: boolean | null) => (met === true ? "✅ met" : met === false ? "❌ missed" : "– n/a");

/** One line describing the machine. */
export function machineLine(m: MachineInfo): string {
  return `${m.cpus} cores (${m.cpuModel}), ${m.memoryGiB} GiB RAM, ${m.os}; Node ${m.node}, ${m.tofu}, ${m.consul}, cdktf ${m.cdktf}; load average at start ${m.loadAtStart}${m.nodeStartMs === undefined ? "" : `; \`node -e 0\` ${m.nodeStartMs} ms (the machine's speed that day)`}`;
}

/** The targets of every benchmark in one table. */
export function targetsTable(results: BenchResult[]): string {
  const rows = results.flatMap((r) => (r.targets ?? []).map((t) => [t.what, t.target, t.actual, mark(t.met)]));
  return table({ columns: ["Target", "Goal", "Measured", "Result"], rows });
}

/** The whole report as markdown. */
export function renderMarkdown(rep: RunReport): string {
  const out: string[] = [];
  out.push("# cts benchmark results", "");
  out.push(
    `Run ${rep.date} with \`${rep.command}\`${rep.quick ? " (**quick sizes: not the reference numbers**)" : ""}; the suite took ${Math.round(rep.totalSeconds)} s.`,
    "",
    `Machine: ${machineLine(rep.machine)}.`,
    "",
    "Everything ran on 127.0.0.1 against a real Consul dev agent and a real OpenTofu (providers from the offline mirror: hashicorp/local). Times are wall-clock; p50 is the median; with fewer than 100 samples the p99 is the largest or second-largest sample.",
    "",
  );
  out.push("## Targets", "", targetsTable(rep.results), "");
  const missed = rep.results.flatMap((r) => (r.targets ?? []).filter((t) => t.met === false && t.why).map((t) => `- **${t.what}**: ${t.why}`));
  if (missed.length) out.push("Why the missed targets were missed:", "", ...missed, "");
  rep.results.forEach((r, i) => {
    out.push(`## ${i + 1}. ${r.title ?? r.name}`, "");
    if (r.error) {
      out.push(`**This benchmark failed:** ${r.error}`, "");
      return;
    }
    if (r.method) out.push(r.method, "");
    for (const t of r.tables ?? []) out.push(table(t), "");
    if (r.notes?.length) out.push(...r.notes.map((n) => `- ${n}`), "");
    if (r.profile) {
      out.push(`**CPU profile** (${r.profile.what}; ${r.profile.totalMs} ms of CPU samples, idle excluded):`, "");
      out.push(table({ columns: ["Area", "Self ms", "%"], rows: r.profile.byArea.map((a) => [a.area, a.selfMs, `${a.selfPct}%`]) }), "");
      out.push(table({ columns: ["Function", "Where", "Self ms", "%"], rows: r.profile.top.map((f) => [f.fn, f.where, f.selfMs, `${f.selfPct}%`]) }), "");
    }
    out.push(`_Took ${Math.round((r.durationMs ?? 0) / 1000)} s${r.loadAvgStart !== undefined ? `; load average when it started: ${r.loadAvgStart}` : ""}._`, "");
  });
  return out.join("\n");
}
