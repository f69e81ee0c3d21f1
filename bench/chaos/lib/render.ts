import { machineLine } from "../../lib/report.ts";
import { table } from "../../lib/report.ts";
import type { MachineInfo } from "../../lib/machine.ts";
import type { ChaosSizes, Figures, ScenarioResult } from "./types.ts";

/** Which run a scenario's record comes from (in a report merged from several runs). */
export interface RunRef {
  date: string;
  command: string;
  label?: string;
  commit: string;
}

/** One scenario as chaos.json stores it. */
export type ScenarioRecord = Partial<ScenarioResult> & { id: string; name?: string; durationMs?: number; loadAvgStart?: number; error?: string; figures: Figures; run?: RunRef };

/** One run of `npm run chaos` whose scenarios a merged report holds. */
export interface RunInfo extends RunRef {
  totalSeconds: number;
  machine: MachineInfo;
  sizes: ChaosSizes;
  sweptAfterScenarios: number;
  /** Ids of the scenarios of this run the report holds. */
  scenarios: string[];
}

/** Everything written to chaos.json (the top-level fields describe the latest run). */
export interface ChaosReport {
  date: string;
  command: string;
  /** e.g. "pre-fix run" (--label). */
  label?: string;
  commit: string;
  totalSeconds: number;
  machine: MachineInfo;
  sizes: ChaosSizes;
  /** Processes the runner found and killed after a scenario ended (should be none). */
  sweptAfterScenarios: number;
  scenarios: ScenarioRecord[];
  /** When `--only`/`--skip` kept the earlier runs' other scenarios: every run the report holds, oldest first. */
  runs?: RunInfo[];
}

/** The run `rep` describes at its top level, as a reference its records can carry. */
export function runRefOf(rep: ChaosReport): RunRef {
  return { date: rep.date, command: rep.command, ...(rep.label ? { label: rep.label } : {}), commit: rep.commit };
}

/** The runs a report holds (one for a report written by a single run). */
export function runsOf(rep: ChaosReport): RunInfo[] {
  return rep.runs ?? [{ ...runRefOf(rep), totalSeconds: rep.totalSeconds, machine: rep.machine, sizes: rep.sizes, sweptAfterScenarios: rep.sweptAfterScenarios, scenarios: rep.scenarios.map((s) => s.id) }];
}

/**
 * `latest`'s scenarios in place of the same ones in `earlier` (a report from earlier runs, when
 * there is one); the earlier runs' other scenarios are kept, in `order` (scenario ids), and every
 * record names the run it comes from.
 */
export function mergeReports(earlier: ChaosReport | undefined, latest: ChaosReport, order: string[]): ChaosReport {
  if (!earlier) return latest;
  const fresh = new Set(latest.scenarios.map((s) => s.id));
  const earlierRef = runRefOf(earlier);
  const kept = earlier.scenarios.filter((s) => !fresh.has(s.id)).map((s) => ({ ...s, run: s.run ?? earlierRef }));
  const latestRef = runRefOf(latest);
  const scenarios = [...kept, ...latest.scenarios.map((s) => ({ ...s, run: latestRef }))].sort((a, b) => order.indexOf(a.id) - order.indexOf(b.id));
  const runs = [...runsOf(earlier), ...runsOf(latest)]
    .map((r) => ({ ...r, scenarios: scenarios.filter((s) => s.run.date === r.date).map((s) => s.id) }))
    .filter((r) => r.scenarios.length > 0);
  return { ...latest, scenarios, runs };
}

const runName = (r: RunRef) => `${r.date}${r.label ? ` (${r.label})` : ""}`;

/** The figures table (one row per scenario). */
export function figuresTable(scenarios: ScenarioRecord[]): string {
  return table({
    columns: ["Scenario", "Changes", "Runs", "Failed attempts", "Orphans", "RSS min–max", "Recovery", "Verdict"],
    rows: scenarios.map(({ figures: f }) => [f.scenario, f.changes, f.runs, f.errors, f.orphans, f.rss, f.recovery, f.verdict]),
  });
}

/** The whole report as markdown. */
export function renderChaos(rep: ChaosReport): string {
  const runs = runsOf(rep);
  const merged = runs.length > 1;
  const out: string[] = [merged ? "# cts chaos runs" : "# cts chaos run" + (rep.label ? ` (${rep.label})` : ""), ""];
  if (merged)
    out.push(
      `The scenarios come from ${runs.length} runs (a run with \`--only\` or \`--skip\` replaces its scenarios and keeps the others); each section names its run.`,
      "",
      ...runs.map((r) => `- ${runName(r)}: \`${r.command}\` on commit ${r.commit}, ${r.totalSeconds} s, scenarios ${r.scenarios.join(", ")}. Machine: ${machineLine(r.machine)}.`),
      "",
    );
  else out.push(`Run ${rep.date} with \`${rep.command}\` on commit ${rep.commit}; took ${rep.totalSeconds} s.`, "", `Machine: ${machineLine(rep.machine)}.`, "");
  out.push(
    "Every server ran on 127.0.0.1: a real Consul dev agent, real OpenTofu (providers from the offline mirror) and real `cts` processes (bin/cts.js). \"Failed attempts\" counts every failed Terraform attempt in the daemon's log, including those a retry hid. \"Orphans\" are processes (tofu, providers, local-exec) still running under the scenario's working dir when nothing of cts should be running.",
    "",
    figuresTable(rep.scenarios),
    "",
  );
  for (const r of runs) if (r.sweptAfterScenarios) out.push(`_The runner killed ${r.sweptAfterScenarios} leftover processes after the scenarios${merged ? ` of the run of ${runName(r)}` : ""} ended._`, "");
  rep.scenarios.forEach((s) => {
    out.push(`## ${s.figures.scenario}${s.title ? `: ${s.title}` : ""}`, "");
    if (s.error) out.push(`**Failed:** ${s.error}`, "");
    if (s.method) out.push(s.method, "");
    for (const t of s.tables ?? []) out.push(table(t), "");
    if (s.notes?.length) out.push(...s.notes.map((n) => `- ${n.replace(/\|/g, "\\|")}`), "");
    out.push(`_${merged && s.run ? `From the run of ${runName(s.run)}, commit ${s.run.commit}. ` : ""}Took ${Math.round((s.durationMs ?? 0) / 1000)} s; load average when it started: ${s.loadAvgStart ?? "?"}._`, "");
  });
  return out.join("\n");
}
