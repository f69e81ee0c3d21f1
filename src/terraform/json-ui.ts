import type { ChangeSummary, ResourceChange } from "./types.ts";

/** One diagnostic (error or warning) from Terraform's machine-readable UI. */
export interface Diagnostic {
  severity: "error" | "warning";
  summary: string;
  detail: string;
  /** "main.tf.json line 3", when Terraform gave a source range. */
  location?: string;
  /** The resource address the diagnostic belongs to, when given. */
  address?: string;
}

/** A `change_summary` message: `operation` is "plan", "apply" or "destroy". */
export interface UiChangeSummary extends ChangeSummary {
  operation: string;
}

/** What one line of `-json` output means to us. */
export type UiEvent =
  | { kind: "summary"; summary: UiChangeSummary; lines: string[] }
  | { kind: "diagnostic"; diagnostic: Diagnostic; lines: string[] }
  | { kind: "message"; type: string; lines: string[]; change?: ResourceChange; outputs?: unknown };

const num = (v: unknown): number => (typeof v === "number" && Number.isFinite(v) ? v : 0);
const str = (v: unknown): string => (typeof v === "string" ? v : "");

/** Human lines for one diagnostic, shaped like Terraform's own text output. */
export function renderDiagnostic(d: Diagnostic): string[] {
  const lines = [`${d.severity === "error" ? "Error" : "Warning"}: ${d.summary}`];
  if (d.location) lines.push(`  on ${d.location}${d.address ? ` (${d.address})` : ""}`);
  for (const l of d.detail.split("\n")) if (l.trim()) lines.push(`  ${l}`);
  return lines;
}

/**
 * Parses one stdout line of `plan/apply -json`. Lines that are not JSON objects (a panic, output
 * printed before the JSON view starts) come back as plain text so nothing is lost.
 */
export function parseUiLine(line: string): UiEvent | undefined {
  if (!line.trim()) return undefined;
  let msg: Record<string, unknown>;
  try {
    const parsed: unknown = JSON.parse(line);
    if (!parsed || typeof parsed !== "object" || Array.isArray(parsed)) throw new Error("not an object");
    msg = parsed as Record<string, unknown>;
  } catch {
    return { kind: "message", type: "text", lines: [line] };
  }
  const type = str(msg.type);
  const text = str(msg["@message"]);
  if (type === "change_summary") {
    const c = (msg.changes ?? {}) as Record<string, unknown>;
    const summary = { add: num(c.add), change: num(c.change), destroy: num(c.remove), operation: str(c.operation) };
    return { kind: "summary", summary, lines: text ? [text] : [] };
  }
  if (type === "diagnostic") {
    const d = (msg.diagnostic ?? {}) as Record<string, unknown>;
    const range = d.range as { filename?: string; start?: { line?: number } } | undefined;
    const diagnostic: Diagnostic = {
      severity: d.severity === "warning" ? "warning" : "error",
      summary: str(d.summary) || text,
      detail: str(d.detail),
    };
    if (range?.filename) diagnostic.location = `${range.filename}${range.start?.line ? ` line ${range.start.line}` : ""}`;
    if (str(d.address)) diagnostic.address = str(d.address);
    return { kind: "diagnostic", diagnostic, lines: renderDiagnostic(diagnostic) };
  }
  // The version banner is noise in a per-task log; everything else reads well as its @message.
  if (type === "version") return { kind: "message", type, lines: [] };
  // An apply's outputs (sensitive ones without their value); the message itself is "Outputs: N".
  if (type === "outputs") return { kind: "message", type, lines: text ? [text] : [], outputs: msg.outputs ?? {} };
  if (type === "planned_change") {
    const c = (msg.change ?? {}) as { resource?: { addr?: unknown }; action?: unknown };
    const address = str(c.resource?.addr);
    const action = str(c.action);
    const change = address && action && action !== "noop" ? { address, action } : undefined;
    return { kind: "message", type, lines: text ? [text] : [], ...(change ? { change } : {}) };
  }
  // Some messages (the interrupt notice) span several lines with blank ones around them.
  return { kind: "message", type, lines: text.split("\n").map((l) => l.trimEnd()).filter((l) => l.trim()) };
}

/** Resource changes kept per run (an event stays small; the counts stay exact). */
export const MAX_RESOURCE_CHANGES = 100;

/** Collects a whole `-json` stream: the change summaries, the diagnostics and the human text. */
export class UiStream {
  /** change_summary messages by operation ("plan", "apply", "destroy"). */
  readonly summaries = new Map<string, UiChangeSummary>();
  readonly diagnostics: Diagnostic[] = [];
  readonly lines: string[] = [];
  /** How many planned_change messages arrived (resources a plan would touch). */
  plannedChanges = 0;
  /** The first MAX_RESOURCE_CHANGES of them by address, in Terraform's order. */
  readonly resourceChanges: ResourceChange[] = [];
  /** The last `outputs` message's outputs, as Terraform wrote them (read with redactOutputs, never logged). */
  outputs: unknown;

  /** Feeds one stdout line; returns the human lines it produced (possibly none). */
  push(line: string): string[] {
    const ev = parseUiLine(line);
    if (!ev) return [];
    if (ev.kind === "summary") this.summaries.set(ev.summary.operation, ev.summary);
    else if (ev.kind === "diagnostic") this.diagnostics.push(ev.diagnostic);
    else if (ev.type === "outputs") this.outputs = ev.outputs;
    else if (ev.type === "planned_change") {
      this.plannedChanges++;
      if (ev.change && this.resourceChanges.length < MAX_RESOURCE_CHANGES) this.resourceChanges.push(ev.change);
    }
    this.lines.push(...ev.lines);
    return ev.lines;
  }

  /** The summary of the operation that ran (apply/destroy win over the plan they start with). */
  summary(...preferred: string[]): ChangeSummary {
    for (const op of preferred) {
      const s = this.summaries.get(op);
      if (s) return { add: s.add, change: s.change, destroy: s.destroy };
    }
    return { add: 0, change: 0, destroy: 0 };
  }

  /** "summary: detail" of every error, for error messages. */
  errorText(max = 1500): string {
    const text = this.diagnostics
      .filter((d) => d.severity === "error")
      .map((d) => (d.detail ? `${d.summary}: ${d.detail.replace(/\s+/g, " ").trim()}` : d.summary))
      .join("; ");
    return text.length > max ? `${text.slice(0, max - 1)}…` : text;
  }
}
