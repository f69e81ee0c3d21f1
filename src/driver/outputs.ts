import type { TaskOutput, TaskOutputs } from "./types.ts";

/** What a sensitive output's value reads everywhere cts shows or keeps it. */
export const SENSITIVE_OUTPUT = "(sensitive)";
/** What an output's value reads when it was too large to keep. */
export const OUTPUT_TOO_LARGE = "(too large)";
/** The largest value kept, as JSON (a value larger reads OUTPUT_TOO_LARGE, `truncated: true`). */
export const MAX_OUTPUT_BYTES = 64 * 1024;
/** The most outputs kept of one task. */
export const MAX_OUTPUTS = 200;
/** An output name Terraform accepts (an identifier); anything else is dropped. */
const OUTPUT_NAME = /^[A-Za-z_][A-Za-z0-9_-]{0,127}$/;

/**
 * A task's outputs as cts keeps them, from what Terraform or Terraform Cloud answered
 * (`{"name": {"value": …, "type": …, "sensitive": bool}}`, or a list of `{name, value, sensitive}`):
 * a sensitive output keeps `sensitive: true` and its value is replaced; a value too large to keep
 * is replaced and marked `truncated`. Anything that is not an output is dropped.
 */
export function redactOutputs(raw: unknown): TaskOutputs {
  const entries: Array<[string, unknown]> = Array.isArray(raw)
    ? raw.map((o) => [String((o as { name?: unknown } | null)?.name ?? ""), o])
    : raw && typeof raw === "object"
      ? Object.entries(raw as Record<string, unknown>)
      : [];
  const out: TaskOutputs = {};
  for (const [name, o] of entries) {
    if (Object.keys(out).length >= MAX_OUTPUTS) break;
    if (!OUTPUT_NAME.test(name) || !o || typeof o !== "object") continue;
    const { value, type, sensitive } = o as { value?: unknown; type?: unknown; sensitive?: unknown };
    const kept: TaskOutput = { value: null, sensitive: sensitive === true };
    if (type !== undefined && jsonSize(type) <= 4096) kept.type = type;
    if (kept.sensitive) kept.value = SENSITIVE_OUTPUT;
    else if (jsonSize(value ?? null) > MAX_OUTPUT_BYTES) {
      kept.value = OUTPUT_TOO_LARGE;
      kept.truncated = true;
    } else kept.value = value ?? null;
    out[name] = kept;
  }
  return out;
}

/** Whether a stored value (a file, a KV entry: writable by others) is a task's outputs as cts keeps them. */
export function isTaskOutputs(v: unknown): v is TaskOutputs {
  if (!v || typeof v !== "object" || Array.isArray(v)) return false;
  for (const [name, o] of Object.entries(v as Record<string, unknown>)) {
    if (!OUTPUT_NAME.test(name) || !o || typeof o !== "object" || typeof (o as TaskOutput).sensitive !== "boolean") return false;
    if ((o as TaskOutput).sensitive && (o as TaskOutput).value !== SENSITIVE_OUTPUT) return false; // never a sensitive value, whoever wrote it
  }
  return true;
}

function jsonSize(v: unknown): number {
  try {
    return Buffer.byteLength(JSON.stringify(v) ?? "null");
  } catch {
    return Infinity; // a value JSON cannot write (a cycle): not kept
  }
}
