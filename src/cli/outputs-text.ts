import type { ApiBody } from "./api-client.ts";
import { table } from "./output.ts";

/** A value as one line: strings as they are, the rest as JSON (cut at 200 characters). */
function valueText(v: unknown): string {
  const text = typeof v === "string" ? v : JSON.stringify(v);
  const line = (text ?? "null").replace(/[\u0000-\u001f\u007f]/g, " ");
  return line.length > 200 ? `${line.slice(0, 199)}…` : line;
}

/** The outputs of a task as a table: NAME, VALUE ("(sensitive)" for a sensitive one), and whether it is sensitive. */
export function outputsText(values: Record<string, ApiBody>): string {
  const names = Object.keys(values).sort();
  if (!names.length) return "(no outputs)\n";
  return table([["NAME", "VALUE", "SENSITIVE"], ...names.map((n) => [n, valueText(values[n]!.value), values[n]!.sensitive ? "yes" : "no"])]);
}
