import type { AttributeChange, BlockChange } from "../synth/json-diff.ts";

/** One task's difference between the base ref and the working tree (or the head ref). */
export interface TaskDiff {
  task: string;
  /** "added"/"removed": the task exists on one side only; "error": a side failed to synthesize. */
  status: "unchanged" | "changed" | "added" | "removed" | "error";
  changes: BlockChange[];
  error?: string;
  /** With --plan: Terraform's plan of the compared version against the task's state, or why it failed. */
  plan?: PlanSummary | { error: string };
}

/** What Terraform would do: counts, and the resources by address with the plan's text of each (its values). */
export interface PlanSummary {
  add: number;
  change: number;
  destroy: number;
  resources: PlannedResource[];
}

/** One resource of a plan: Terraform's action, and the lines `tofu show` writes for it (values; sensitive ones as Terraform hides them). */
export interface PlannedResource {
  address: string;
  action: string;
  lines?: string[];
}

/** What `cts diff` compared, and the result per task. */
export interface DiffReport {
  base: string;
  /** The ref compared with `base` (--head); absent: the working tree. */
  head?: string;
  snapshot?: string;
  tasks: TaskDiff[];
}

/** Terraform's plan symbols for an action. */
const ACTION_SYMBOL: Record<string, string> = { create: "+", delete: "-", update: "~", replace: "-/+", read: "<=" };
const SIGN = { add: "+", change: "~", remove: "-" } as const;
const UNSET = "(unset)";

/** "+1 ~2 -0" counts of a task's changes. */
function counts(c: BlockChange[]): { add: number; change: number; remove: number } {
  return { add: c.filter((x) => x.action === "add").length, change: c.filter((x) => x.action === "change").length, remove: c.filter((x) => x.action === "remove").length };
}

function countText(c: BlockChange[]): string {
  const n = counts(c);
  return `${n.add} to add, ${n.change} to change, ${n.remove} to remove`;
}

/** The block as the task named it, with its Terraform address when that reads differently. */
function label(c: BlockChange): string {
  return c.name ? `${c.name} (${c.address})` : c.address;
}

function changeText(a: AttributeChange): string {
  return `${a.path}: ${a.before ?? UNSET} → ${a.after ?? UNSET}`;
}

/**
 * A block's lines: its sign and name, then each attribute (added, removed) or each change,
 * indented. `signed`: an added or removed block's attributes carry its sign too (a `diff` code
 * block then colours the whole block).
 */
function blockLines(c: BlockChange, signed = false): string[] {
  const sign = SIGN[c.action];
  const indent = signed && c.action !== "change" ? `${sign}   ` : "    ";
  const out = [`${sign} ${label(c)}`];
  if (c.changes) for (const a of c.changes) out.push(`${indent}${changeText(a)}`);
  if (c.attributes) for (const a of c.attributes) out.push(`${indent}${a.path}: ${a.value}`);
  if (c.more) out.push(`${indent}… ${c.more} more`);
  return out;
}

function planHeadline(p: PlanSummary): string {
  return `plan against the task's state: ${p.add} to add, ${p.change} to change, ${p.destroy} to destroy`;
}

function compared(r: DiffReport): string {
  return r.head ? r.head : "the working tree";
}

/** The report as plain text for a terminal. */
export function diffText(r: DiffReport): string {
  const out = [`Comparing ${r.base} with ${compared(r)}${r.snapshot ? ` over ${r.snapshot}` : " over live Consul data"}.`];
  for (const t of r.tasks) {
    if (t.status === "error") out.push(`\nTask ${t.task}: error: ${t.error}`);
    else if (t.status === "unchanged") out.push(`\nTask ${t.task}: no changes`);
    else {
      out.push(`\nTask ${t.task}${t.status === "changed" ? "" : ` (${t.status})`}: ${countText(t.changes)}`);
      for (const c of t.changes) for (const l of blockLines(c)) out.push(`  ${l}`);
    }
    if (t.plan && "error" in t.plan) out.push(`  plan failed: ${t.plan.error}`);
    else if (t.plan) {
      out.push(`  ${planHeadline(t.plan)}`);
      for (const res of t.plan.resources) {
        out.push(`    ${ACTION_SYMBOL[res.action] ?? "*"} ${res.address} (${res.action})`);
        for (const l of res.lines ?? []) out.push(`      ${l}`);
      }
    }
  }
  return out.join("\n") + "\n";
}

/**
 * The report as Markdown for a pull request comment: a table of tasks, then each changed task's
 * blocks and values in a `diff` code block (and, with --plan, Terraform's plan of each resource).
 * Values can carry catalog text: it only ever appears inside code blocks, whose fence is longer
 * than any run of backticks in them, so no text in the data can end a block or become Markdown
 * or HTML. Task names and refs outside them are written as code too.
 */
export function diffMarkdown(r: DiffReport): string {
  const changed = r.tasks.filter((t) => t.status !== "unchanged");
  const out = [`### cts diff: ${code(r.base)} → ${r.head ? code(r.head) : "working tree"}`, ""];
  if (changed.length === 0) {
    out.push(`No task's Terraform changes (${r.tasks.length} compared).`);
    return out.join("\n") + "\n";
  }
  out.push("| Task | Status | Add | Change | Remove |", "|---|---|---:|---:|---:|");
  for (const t of r.tasks) {
    const n = counts(t.changes);
    out.push(`| ${code(t.task)} | ${t.status} | ${n.add} | ${n.change} | ${n.remove} |`);
  }
  for (const t of changed) {
    const summary = t.status === "error" ? "error" : `${t.status}: ${countText(t.changes)}`;
    out.push("", `<details open><summary><code>${html(t.task)}</code>: ${summary}</summary>`, "");
    const lines = t.status === "error" ? [`! ${t.error ?? ""}`] : t.changes.flatMap((c) => blockLines(c, true));
    if (lines.length) out.push(...fenced("diff", lines), "");
    if (t.plan && "error" in t.plan) out.push("Plan failed:", "", ...fenced("", [t.plan.error]), "");
    else if (t.plan) {
      out.push(`Terraform's ${planHeadline(t.plan)}:`, "");
      const planned = t.plan.resources.flatMap((res) => (res.lines?.length ? res.lines.map(diffLine) : [`${ACTION_SYMBOL[res.action] ?? "*"} ${res.address} (${res.action})`]));
      if (planned.length) out.push(...fenced("diff", planned), "");
    }
    out.push("</details>");
  }
  return out.join("\n") + "\n";
}

/** Text for HTML (a task name may hold `&`). */
function html(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

/** Inline code that no backtick in `text` can end. */
function code(text: string): string {
  const longest = Math.max(0, ...[...text.matchAll(/`+/g)].map((m) => m[0].length));
  const ticks = "`".repeat(longest + 1);
  return longest ? `${ticks} ${text} ${ticks}` : `${ticks}${text}${ticks}`;
}

/** A fenced code block whose fence is longer than any run of backticks in `lines`. */
function fenced(info: string, lines: string[]): string[] {
  const longest = Math.max(0, ...lines.flatMap((l) => [...l.matchAll(/`+/g)].map((m) => m[0].length)));
  const fence = "`".repeat(Math.max(3, longest + 1));
  return [`${fence}${info}`, ...lines, fence];
}

/** A line of Terraform's plan text with its action symbol moved to the front, as a `diff` block colours it (the text keeps its column). */
function diffLine(line: string): string {
  const m = /^(\s*)(-\/\+|\+\/-|[+~-]|<=)( .*)$/.exec(line);
  return m ? `${m[2]}${m[1]}${m[3]}` : line;
}

/** True when some task's Terraform would change. */
export function hasChanges(r: DiffReport): boolean {
  return r.tasks.some((t) => t.status === "changed" || t.status === "added" || t.status === "removed");
}
