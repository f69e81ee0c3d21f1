/** True for a plain object (not null, not an array): JSON objects, HCL blocks, API bodies. */
export function isObject<V = unknown>(v: unknown): v is Record<string, V> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}
