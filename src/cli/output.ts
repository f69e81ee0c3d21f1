import { knownSecrets } from "../secrets/redactor.ts";

/** Renders rows as an aligned text table (first row = header). */
export function table(rows: string[][]): string {
  if (rows.length === 0) return "";
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? "").length)));
  return knownSecrets.redact(rows.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!))).join("  ").trimEnd()).join("\n") + "\n");
}

/** Prints JSON to stdout (known secrets scrubbed). */
export function printJson(value: unknown): void {
  process.stdout.write(JSON.stringify(knownSecrets.redactDeep(value), null, 2) + "\n");
}

/** Writes text to stdout or stderr with every known secret scrubbed (Terraform texts, errors). */
export function say(text: string, stream: NodeJS.WriteStream = process.stdout): void {
  stream.write(knownSecrets.redact(text));
}
