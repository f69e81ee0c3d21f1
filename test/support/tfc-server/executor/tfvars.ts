/** A variable as a run sees it: an HCL expression, or a string to quote. */
export interface RunVariable {
  key: string;
  value: string;
  hcl: boolean;
}

/**
 * `terraform.tfvars` for a run, as TFC writes it: an HCL variable's value is written as the
 * expression it is, any other value as a quoted HCL string (never evaluated: `${` and `%{` are
 * escaped). Later entries with the same key win (run variables over workspace variables).
 */
export function tfvarsFile(vars: RunVariable[]): string {
  const byKey = new Map<string, RunVariable>();
  for (const v of vars) byKey.set(v.key, v);
  return [...byKey.values()].map((v) => `${v.key} = ${v.hcl ? v.value : hclString(v.value)}\n`).join("");
}

/** An HCL quoted string literal of `s`. */
export function hclString(s: string): string {
  const escaped = s
    .replace(/\\/g, "\\\\")
    .replace(/"/g, '\\"')
    .replace(/\n/g, "\\n")
    .replace(/\r/g, "\\r")
    .replace(/\t/g, "\\t")
    .replace(/[\u0000-\u001f\u007f]/g, (ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, "0")}`)
    // Replacer functions: in a replacement string "$${" would collapse to "${".
    .replace(/\$\{/g, () => "$${")
    .replace(/%\{/g, () => "%%{");
  return `"${escaped}"`;
}
