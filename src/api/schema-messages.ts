import { z } from "zod";

/**
 * zod schema builders that carry OUR messages (field name first, then what is wrong and the fix),
 * and the translator from zod's issues to those messages. Every schema the API validates with is
 * built from these, so zod's own English ("Invalid input: expected string") never reaches a client.
 */

/** Whether a JSON value is an object (not null, not a list). */
import { isObject } from "../values/is-object.ts";
import { suggestKey } from "../errors/unknown-options.ts";

export { isObject };
/** A short description of a JSON value for messages. */
export const show = (v: unknown) => (v === null ? "null" : Array.isArray(v) ? "a list" : typeof v === "object" ? "an object" : JSON.stringify(v)?.slice(0, 40) ?? String(v));

/** Options for refinements that must see a half-valid object too (cross-field checks on raw values). */
export const whenObject = { when: (payload: { value: unknown }) => isObject(payload.value) };

/** A string: "is required." when missing (unless `.optional()`), "must be a string (got 7)." otherwise. */
export function text(opts: { nonEmpty?: boolean } = {}) {
  const s = z.string({ error: (iss) => (iss.input === undefined ? "is required." : `must be a string (got ${show(iss.input)}).`) });
  return opts.nonEmpty ? s.refine((v) => v.trim() !== "", { error: "must not be empty." }) : s;
}

/** A boolean: "must be true or false (got "yes")." */
export const flag = () => z.boolean({ error: (iss) => `must be true or false (got ${show(iss.input)}).` });

/** A list whose every problem (not a list, a bad item) is reported on the list with one message. */
export const listOf = <T extends z.ZodType>(item: T, message: string) => z.array(item, { error: message });

/** An object of string values (Consul metadata); one message for the object and its values. */
export const stringMap = () =>
  z.custom<Record<string, string>>((v) => isObject(v) && Object.values(v).every((x) => typeof x === "string"), { error: "must be an object of string values." });

/** How an object field names itself when it is not an object, and how it refuses unknown keys. */
export interface ObjectWording {
  /** Appended to "must be an object": e.g. `with services and/or consul_kv`. */
  like?: string;
  /** The message for a key the object does not know (default: "is not a known field. Use: …"). */
  unknownKey?: string;
  /** The keys listed in the default unknown-key message. */
  known?: readonly string[];
}

/** zod's `error` option for an object: our wording for "not an object" and for unknown keys. */
export function objectErrors(w: ObjectWording) {
  return (iss: { code?: string; input?: unknown; keys?: string[] }) =>
    iss.code === "unrecognized_keys"
      ? (w.unknownKey ?? `is not a known field${meant(iss.keys ?? [], w.known ?? [])}. Use: ${(w.known ?? []).join(", ")}.`)
      : `must be an object${w.like ? ` ${w.like}` : ""} (got ${show(iss.input)}).`;
}

/** " (did you mean `filter`?)" for a misspelt key, "" when no known key is close (one message serves every unknown key of the object). */
function meant(keys: readonly string[], known: readonly string[]): string {
  const pairs = keys.map((k) => [k, suggestKey(k, known)] as const).filter((p): p is readonly [string, string] => p[1] !== undefined);
  if (pairs.length === 0) return "";
  if (keys.length === 1) return ` (did you mean \`${pairs[0]![1]}\`?)`;
  return ` (did you mean ${pairs.map(([k, s]) => `\`${s}\` for \`${k.slice(0, 60)}\``).join(", ")}?)`;
}

/** An object that refuses unknown keys, naming the keys it knows. */
export function fields<S extends z.ZodRawShape>(shape: S, w: ObjectWording = {}) {
  return z.strictObject(shape, { error: objectErrors({ known: Object.keys(shape), ...w }) });
}

/** Keys refused with a reason (renamed or unsupported CTS fields): present → that reason. */
export function refusedKeys<K extends string>(reasons: Record<K, string>) {
  const shape = {} as Record<K, z.ZodOptional<z.ZodNever>>;
  for (const [k, why] of Object.entries(reasons) as [K, string][]) shape[k] = z.never({ error: why }).optional();
  return shape;
}

/**
 * Our messages from zod's issues: `task.condition.services.names must be a non-empty list of
 * strings.` One message per unknown key; an issue inside a list is reported on the list (its
 * message already says what the items must be), and repeats are dropped.
 */
export function problemsOf(issues: readonly z.core.$ZodIssue[], at: string): string[] {
  const out: string[] = [];
  for (const iss of issues) {
    const listAt = iss.path.findIndex((seg) => typeof seg === "number");
    const path = (listAt < 0 ? iss.path : iss.path.slice(0, listAt)).map(String);
    const where = [at, ...path].filter((s) => s !== "").join(".");
    if (iss.code === "unrecognized_keys") for (const key of iss.keys) out.push(`${where ? `${where}.` : ""}${key.slice(0, 60)} ${iss.message}`);
    else out.push(where ? `${where} ${iss.message}` : iss.message);
  }
  return [...new Set(out)];
}
