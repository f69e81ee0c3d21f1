import type { BlockChange } from "../synth/json-diff.ts";

/** One task's difference between the base ref and the working tree. */
export interface TaskDiff {
  task: string;
  /** "added"/"removed": the task exists on one side only; "error": a side failed to synthesize. */
  status: "unchanged" | "changed" | "added" | "removed" | "error";
  changes: BlockChange[];
  error?: string;
  /** With --plan: Terraform's plan of the working tree's version against the task's state, or why it failed. */
  plan?: PlanSummary | { error: string };
}

/** What Terraform would do: counts and the resources by address. */
export interface PlanSummary {
  add: number;
  change: number;
  destroy: number;
  resources: Array<{ address: string; action: string }>;
}

/** Terraform's plan symbols for an action. */
const ACTION_SYMBOL: Record<string, string> = { create: "+", delete: "-", update: "~", replace: "-/+", read: "<=" };

function planLines(p: TaskDiff["plan"]): string[] {
  if (!p) return [];
  if ("error" in p) return [`plan failed: ${p.error}`];
  return [`plan against the task's state: ${p.add} to add, ${p.change} to change, ${p.destroy} to destroy`, ...p.resources.map((r) => `  ${ACTION_SYMBOL[r.action] ?? "*"} ${r.address} (${r.action})`)];
}

/** What `cts diff` compared, and the result per task. */
export interface DiffReport {
  base: string;
  snapshot?: string;
  tasks: TaskDiff[];
}

const SIGN = { add: "+", change: "~", remove: "-" } as const;

/** "+1 ~2 -0" counts of a task's changes. */
function counts(c: BlockChange[]): { add: number; change: number; remove: number } {
  return { add: c.filter((x) => x.action === "add").length, change: c.filter((x) => x.action === "change").length, remove: c.filter((x) => x.action === "remove").length };
}

function line(c: BlockChange): string {
  return `${SIGN[c.action]} ${c.address}${c.paths ? `: ${c.paths.join(", ")}` : ""}`;
}

/** The report as plain text for a terminal. */
export function diffText(r: DiffReport): string {
  const out = [`Comparing ${r.base} with the working tree${r.snapshot ? ` over ${r.snapshot}` : " over live Consul data"}.`];
  for (const t of r.tasks) {
    const n = counts(t.changes);
    if (t.status === "error") out.push(`\nTask ${t.task}: error: ${t.error}`);
    else if (t.status === "unchanged") out.push(`\nTask ${t.task}: no changes`);
    else {
      out.push(`\nTask ${t.task}${t.status === "changed" ? "" : ` (${t.status})`}: ${n.add} to add, ${n.change} to change, ${n.remove} to remove`);
      for (const c of t.changes) out.push(`  ${line(c)}`);
      for (const l of planLines(t.plan)) out.push(`  ${l}`);
    }
  }
  return out.join("\n") + "\n";
}

/**
 * The report as Markdown for a pull request comment: a table of tasks, then each changed task's
 * blocks in a collapsed `diff` code block. Attribute paths can carry catalog text, so backticks
 * in them are replaced (a fence in the data must not end the code block).
 */
export function diffMarkdown(r: DiffReport): string {
  const changed = r.tasks.filter((t) => t.status !== "unchanged");
  const out = [`### cts diff: \`${r.base.replace(/`/g, "'")}\` → working tree`, ""];
  if (changed.length === 0) {
    out.push(`No task's Terraform changes (${r.tasks.length} compared).`);
    return out.join("\n") + "\n";
  }
  out.push("| Task | Status | Add | Change | Remove |", "|---|---|---:|---:|---:|");
  for (const t of r.tasks) {
    const n = counts(t.changes);
    out.push(`| \`${t.task}\` | ${t.status} | ${n.add} | ${n.change} | ${n.remove} |`);
  }
  for (const t of changed) {
    out.push("", `<details><summary><code>${t.task}</code>: ${t.status}</summary>`, "", "```diff");
    if (t.status === "error") out.push(`! ${(t.error ?? "").replace(/`/g, "'")}`);
    for (const c of t.changes) out.push(line(c).replace(/`/g, "'"));
    out.push("```");
    const plan = planLines(t.plan);
    if (plan.length) out.push("", `Plan: ${plan[0]!.replace(/`/g, "'")}`, ...(plan.length > 1 ? ["", "```", ...plan.slice(1).map((l) => l.trim().replace(/`/g, "'")), "```"] : []));
    out.push("", "</details>");
  }
  return out.join("\n") + "\n";
}

/** True when some task's Terraform would change. */
export function hasChanges(r: DiffReport): boolean {
  return r.tasks.some((t) => t.status === "changed" || t.status === "added" || t.status === "removed");
}
