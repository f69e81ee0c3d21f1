import { machineLine } from "../../lib/report.ts";
import { table } from "../../lib/report.ts";
import type { MachineInfo } from "../../lib/machine.ts";
import type { ChaosSizes, Figures, ScenarioResult } from "./types.ts";

/** One scenario as chaos.json stores it. */
export type ScenarioRecord = Partial<ScenarioResult> & { id: string; name?: string; durationMs?: number; loadAvgStart?: number; error?: string; figures: Figures };

/** Everything written to chaos.json. */
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
}

/** The figures table (one row per scenario). */
export function figuresTable(scenarios: ScenarioRecord[]): string {
  return table({
    columns: ["Scenario", "Changes", "Runs", "Failed attempts", "Orphans", "RSS min–max", "Recovery", "Verdict"],
    rows: scenarios.map(({ figures: f }) => [f.scenario, f.changes, f.runs, f.errors, f.orphans, f.rss, f.recovery, f.verdict]),
  });
}

/** The whole report as markdown. */
export function renderChaos(rep: ChaosReport): string {
  const out: string[] = ["# cts chaos run" + (rep.label ? ` (${rep.label})` : ""), ""];
  out.push(
    `Run ${rep.date} with \`${rep.command}\` on commit ${rep.commit}; took ${rep.totalSeconds} s.`,
    "",
    `Machine: ${machineLine(rep.machine)}.`,
    "",
    "Every server ran on 127.0.0.1: a real Consul dev agent, real OpenTofu (providers from the offline mirror) and real `cts` processes (bin/cts.js). \"Failed attempts\" counts every failed Terraform attempt in the daemon's log, including those a retry hid. \"Orphans\" are processes (tofu, providers, local-exec) still running under the scenario's working dir when nothing of cts should be running.",
    "",
    figuresTable(rep.scenarios),
    "",
  );
  if (rep.sweptAfterScenarios) out.push(`_The runner killed ${rep.sweptAfterScenarios} leftover processes after the scenarios ended._`, "");
  rep.scenarios.forEach((s) => {
    out.push(`## ${s.figures.scenario}${s.title ? `: ${s.title}` : ""}`, "");
    if (s.error) out.push(`**Failed:** ${s.error}`, "");
    if (s.method) out.push(s.method, "");
    for (const t of s.tables ?? []) out.push(table(t), "");
    if (s.notes?.length) out.push(...s.notes.map((n) => `- ${n.replace(/\|/g, "\\|")}`), "");
    out.push(`_Took ${Math.round((s.durationMs ?? 0) / 1000)} s; load average when it started: ${s.loadAvgStart ?? "?"}._`, "");
  });
  return out.join("\n");
}
