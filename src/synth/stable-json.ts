import { createHash } from "node:crypto";
import { dataTooDeep, MAX_WALK_DEPTH } from "../values/data-depth.ts";

/**
 * Copies plain data with object keys sorted at every level, so equal data serializes identically.
 * Past MAX_WALK_DEPTH levels it throws DATA_TOO_DEEP (JSON.stringify would overflow the stack soon after).
 */
export function sortKeys<T>(value: T, depth = 0): T {
  if (value && typeof value === "object" && depth >= MAX_WALK_DEPTH) throw dataTooDeep("the JSON");
  if (Array.isArray(value)) return value.map((v) => sortKeys(v, depth + 1)) as T;
  if (value && typeof value === "object") {
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(value).sort()) {
      const v = (value as Record<string, unknown>)[k];
      if (v !== undefined) out[k] = sortKeys(v, depth + 1);
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
