import { z } from "zod";
import { unknownOptionsError, type OptionSite, type UnknownOption } from "../errors/unknown-options.ts";

// The keys each option object takes are declared once, as zod schemas (option-schemas.ts and
// config/option-schemas.ts), each tied to its TypeScript type by `satisfies ShapeOf<T>`, so a key
// added to a type without its schema (or the reverse) fails `tsc`. The schemas check keys only:
// the values keep their own checks (task/validate.ts, config/load.ts), whose messages name the fix.
// zod is loaded with the public surface (src/index.ts) and the config loader, never by the daemon's
// main thread, which rebuilds tasks from data that was checked where the config was loaded.

/** A shape with exactly the keys of `T`, optional ones included: a missing or an extra key fails `tsc`. */
export type ShapeOf<T> = { [K in keyof Required<T>]: z.ZodType };

/** A value whose own check lives elsewhere (the key is what is checked here). */
export const value = () => z.unknown().optional();

// zod's unknown-key issue does not say which keys the object takes: each strict object writes them
// into the issue's message, which `unknownOptions` reads back (it never reaches a user).
const KNOWN = "cts-known-keys:";

/** An object that takes exactly these keys (each optional here: a missing one is the value checks' business). */
export function strict<S extends z.ZodRawShape>(shape: S) {
  const known = Object.keys(shape);
  return z.strictObject(shape, { error: (iss) => (iss.code === "unrecognized_keys" ? `${KNOWN}${JSON.stringify(known)}` : undefined) });
}

/** `false` or an object of these keys (bufferPeriod, driftCheck, guards …). */
export function falseOr<S extends z.ZodType>(schema: S) {
  return z.union([z.literal(false), schema]);
}

/** Every key of `input` (nested objects included) its schema does not take. */
export function unknownOptions(schema: z.ZodType, input: unknown): UnknownOption[] {
  const parsed = schema.safeParse(input);
  const out: UnknownOption[] = [];
  if (!parsed.success) collect(parsed.error.issues, [], out);
  return out;
}

function collect(issues: readonly z.core.$ZodIssue[], prefix: readonly PropertyKey[], out: UnknownOption[]): void {
  for (const iss of issues) {
    const path = [...prefix, ...iss.path];
    if (iss.code === "unrecognized_keys") {
      const known = iss.message.startsWith(KNOWN) ? (JSON.parse(iss.message.slice(KNOWN.length)) as string[]) : [];
      for (const key of iss.keys) out.push({ path: fieldPath(path), key, known });
    } else if (iss.code === "invalid_union") for (const branch of iss.errors) collect(branch, path, out);
  }
}

/** `["each", 1]` → `["each[1]"]`: list positions written as indexes. */
function fieldPath(path: readonly PropertyKey[]): string[] {
  const out: string[] = [];
  for (const seg of path) {
    if (typeof seg === "number" && out.length) out[out.length - 1] += `[${seg}]`;
    else out.push(String(seg));
  }
  return out;
}

/**
 * Throws OPTION_UNKNOWN when `input` holds a key its schema does not take. `what` names the call
 * for the message (`services()`, `Task 'web' (class WebPool)`); the stack is taken here, so the
 * error names the user's line that made the call.
 */
export function refuseUnknownOptions(schema: z.ZodType, input: unknown, what: string, site?: OptionSite): void {
  if (!input || typeof input !== "object") return;
  const unknowns = unknownOptions(schema, input);
  if (unknowns.length === 0) return;
  throw unknownOptionsError(what, unknowns, site ?? { stack: new Error().stack ?? "" });
}
