import { createHash } from "node:crypto";

/** Copies plain data with object keys sorted at every level, so equal data serializes identically. */
export function sortKeys<T>(value: T): T {
  if (Array.isArray(value)) return value.map((v) => sortKeys(v)) as T;
  if (value && typeof value === "object") {
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(value).sort()) {
      const v = (value as Record<string, unknown>)[k];
      if (v !== undefined) out[k] = sortKeys(v);
    }
    return out as T;
  }
  return value;
}

/** JSON with sorted keys and a trailing newline: the same data always gives the same bytes. */
export function stableStringify(value: unknown, indent = 2): string {
  return JSON.stringify(sortKeys(value), null, indent) + "\n";
}

/** sha256 hex of a string. */
export function sha256(text: string): string {
  return createHash("sha256").update(text).digest("hex");
}
