/** A JSON object (not null, not an array). Kept apart from the zod schemas so importing it loads no zod. */
export const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
