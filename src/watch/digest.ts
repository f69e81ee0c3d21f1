import { createHash } from "node:crypto";

/**
 * Change detection keeps a digest, not the data's JSON: 10,000 watched services would otherwise
 * hold a second copy of everything they watch as strings.
 */

/** sha256 of a string or bytes, base64 (44 characters). */
export function digestOf(text: string | Uint8Array): string {
  return createHash("sha256").update(text).digest("base64");
}

/**
 * Digest of data whose object keys are already in a canonical order (the converters in
 * src/consul/convert.ts build every object in a fixed order and copy maps with sorted keys), so
 * plain JSON.stringify is stable: 3–6× cheaper than sorting keys on the way.
 */
export function canonicalDigest(value: unknown): string {
  return digestOf(JSON.stringify(value) ?? "undefined");
}

/** Digest of any plain data, whatever its key order. */
export function stableDigest(value: unknown): string {
  return digestOf(stableStringify(value) ?? "undefined");
}

/** JSON with object keys sorted, so equal data compares equal whatever the key order. */
export function stableStringify(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => {
    if (v && typeof v === "object" && !Array.isArray(v)) {
      const out: Record<string, unknown> = {};
      for (const k of Object.keys(v).sort()) out[k] = (v as Record<string, unknown>)[k];
      return out;
    }
    return v;
  });
}
