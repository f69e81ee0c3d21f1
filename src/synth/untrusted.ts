import { CtsError } from "../errors.ts";
/**
 * Catalog data is untrusted. Terraform evaluates `${…}` and `%{…}` in every JSON string, and cdktf
 * resolves anything shaped like its token markers (`${TfToken[…]}`, `#{TfToken[…]}`,
 * `&{TfToken[…]}`). All of these start with a lead character (`$ % # &`) directly followed by `{`,
 * and task code joins catalog strings with each other and with its own text, so the danger is a
 * lead and a `{` meeting — inside one value or across the edge between two pieces.
 *
 * Encoding (before task code sees the data): a MARK (private-use U+E000) goes between a lead and a
 * `{` inside a string, after a lead that ends a string, and before a `{` that starts one. A lead
 * and a `{` of which at least one came from Consul therefore always have a MARK between them,
 * whatever order pieces are concatenated in (`+`, template literals, `join`, handlebars), so
 * neither cdktf nor Terraform sees an opener. A literal U+E000 or U+E001 in the data is prefixed
 * with ESC (U+E001), so data can never forge a MARK.
 *
 * Decoding (after synthesis, `decodeOutput`): MARKs disappear. Where a run of `$` (or `%`) meets a
 * `{` across a MARK, one more `$` is written: Terraform reads n leads before `{` as n-1 literal
 * leads (checked with tofu), so `$`+`{` lands as `$${`, `$$`+`{` as `$$${`. Where data leads run
 * into the task's own live `${` (`"US$" + token`), the data leads are written as `${"$"}` so they
 * cannot turn the task's interpolation into an escape. Values land in infrastructure byte-identical.
 *
 * Quotes and backslashes: cdktf writes the arguments of `Fn.join`, `Fn.format`, … as HCL string
 * literals inside a `${…}` without escaping them, so a data `"` could end the literal and the rest
 * would be Terraform code. Data `"` and `\` therefore travel as QUOTE (U+E002) and BSLASH (U+E003),
 * which cdktf passes untouched; decoding writes them back as `"`/`\` in template text and as `\"`/`\\`
 * inside a string literal of a live expression, where HCL reads them as the same characters.
 *
 * Guaranteed for whole catalog strings (as the task received them, or from `untrusted()`) combined
 * in any order with each other and task text. Not guaranteed when task code cuts a catalog string
 * (slice, split, trim, replace): a new edge carries no MARK. Cut `raw(v)` instead and pass each piece
 * through `untrusted()`; parse JSON from `raw(v)` too. If an empty catalog string sits between a
 * task `$` and a task `{`, the resulting `${` is the task's own text. The only number from Consul is
 * a port (an integer), far from cdktf's numeric token range (~-1.9e289); parse catalog strings into
 * numbers with a bound. Data placed in an expression outside any string literal cannot be written
 * safely and fails the synthesis (TASK_SYNTH_INVALID).
 */
export const MARK = "\uE000";
/** Prefixes a literal U+E000…U+E003 in catalog data. */
export const ESC = "\uE001";
/** A `"` from catalog data. */
export const QUOTE = "\uE002";
/** A `\` from catalog data. */
export const BSLASH = "\uE003";

const LEADS = "$%#&";
const NEEDS_ENCODE = /^\{|[$%#&]\{|[$%#&]$|["\\\uE000-\uE003]/;
const PRIVATE = /[\uE000-\uE003]/;

/** Encodes one untrusted string (see module doc). */
export function encodeUntrusted(s: string): string {
  if (!NEEDS_ENCODE.test(s)) return s;
  let out = "";
  for (let i = 0; i < s.length; i++) {
    const c = s[i]!;
    if (PRIVATE.test(c)) out += ESC + c;
    else if (c === '"') out += QUOTE;
    else if (c === "\\") out += BSLASH;
    else if (c === "{" && (i === 0 || LEADS.includes(s[i - 1]!))) out += MARK + c;
    else if (i === s.length - 1 && LEADS.includes(c)) out += c + MARK;
    else out += c;
  }
  return out;
}

/**
 * Recursively encodes every string (keys included) in plain data from Consul, as a copy. Plain
 * loops instead of map/Object.entries: this walks every string of every instance on each
 * synthesis (25,000 strings at 1,000 instances).
 */
export function encodeData<T>(value: T): T {
  if (typeof value === "string") return encodeUntrusted(value) as T;
  if (typeof value !== "object" || value === null) return value;
  if (Array.isArray(value)) {
    // Pushed, not preallocated: `new Array(n)` makes a holey array, slower for cdktf to walk.
    const out: unknown[] = [];
    for (let i = 0; i < value.length; i++) out.push(encodeData(value[i]));
    return out as T;
  }
  const src = value as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(src)) {
    const key = encodeUntrusted(k);
    const v = encodeData(src[k]);
    // A "__proto__" key from Consul stays data (an assignment would set the copy's prototype).
    if (key === "__proto__") Object.defineProperty(out, key, { value: v, enumerable: true, writable: true, configurable: true });
    else out[key] = v;
  }
  return out as T;
}

/**
 * Marks data derived from catalog strings as untrusted again: pieces of `raw(v).split(",")`, or
 * `JSON.parse(raw(v))` (a JSON object in KV starts with `{`, which carries a MARK).
 */
export const untrusted: <T>(value: T) => T = encodeData;

/** Turns an encoded string back into the original text (for task code that needs the raw value). */
export function raw(s: string): string {
  if (!PRIVATE.test(s)) return s;
  return split(s).chars.join("");
}

/**
 * The text without MARKs and ESCs, QUOTE/BSLASH back to `"`/`\`; for each char whether a MARK came
 * right before it and whether it is a data quote or backslash.
 */
function split(s: string): { chars: string[]; marked: boolean[]; data: boolean[] } {
  const chars: string[] = [];
  const marked: boolean[] = [];
  const data: boolean[] = [];
  let pending = false;
  for (let i = 0; i < s.length; i++) {
    let c = s[i]!;
    let fromData = false;
    if (c === MARK) {
      pending = true;
      continue;
    }
    if (c === ESC) {
      const next = s[i + 1];
      if (next === undefined || !PRIVATE.test(next)) continue; // a stray ESC (cut off by task code) escapes nothing
      c = next;
      i++;
    } else if (c === QUOTE || c === BSLASH) {
      c = c === QUOTE ? '"' : "\\";
      fromData = true;
    }
    chars.push(c);
    marked.push(pending);
    data.push(fromData);
    pending = false;
  }
  return { chars, marked, data };
}

/** Turns an encoded string into Terraform JSON text that evaluates to the original. */
export function decodeForTerraform(s: string): string {
  if (!PRIVATE.test(s)) return s;
  const { chars, marked, data } = split(s);
  // Where the text is: template text, a live `${…}`/`%{…}` expression (with its own `{}` depth),
  // or a string literal inside one. Only the task's own characters move between them.
  const stack: Array<{ kind: "expr"; depth: number } | { kind: "string" }> = [];
  const top = () => stack[stack.length - 1];
  let out = "";
  for (let i = 0; i < chars.length; ) {
    const c = chars[i]!;
    const where = top();
    if (data[i]) {
      if (where?.kind === "expr")
        throw new CtsError("TASK_SYNTH_INVALID", "usage", `a catalog value with ${c === '"' ? "a quote" : "a backslash"} ended up in a Terraform expression outside a string. Pass catalog values to Fn functions as strings, or use raw() and validate them first.`);
      out += where?.kind === "string" ? `\\${c}` : c;
      i++;
      continue;
    }
    if (where?.kind === "string") {
      if (c === "\\") {
        out += c + (chars[i + 1] ?? "");
        i += 2;
        continue;
      }
      if (c === '"') stack.pop();
    } else if (where?.kind === "expr") {
      if (c === '"') stack.push({ kind: "string" });
      else if (c === "{") where.depth++;
      else if (c === "}") {
        if (where.depth === 0) stack.pop();
        else where.depth--;
      }
    }
    if (c !== "$" && c !== "%") {
      out += c;
      i++;
      continue;
    }
    let end = i;
    while (chars[end] === c) end++;
    const run = chars.slice(i, end).join("");
    if (chars[end] !== "{") out += run;
    else if (marked[end]) out += run + c; // catalog data on one side: n+1 leads read back as n
    else {
      out += beforeLiveOpener(run, marked.slice(i, end));
      // An odd number of the task's own leads before its `{` opens an expression (`$${` is text).
      const taskLeads = end - i - Math.max(0, marked.slice(i, end).lastIndexOf(true));
      if (taskLeads % 2 === 1 && where?.kind !== "expr") {
        out += "{";
        stack.push({ kind: "expr", depth: 0 });
        end++;
      }
    }
    i = end;
  }
  return out;
}

/** A lead run ending in the task's own opener: leads before the last MARK are data and literal. */
function beforeLiveOpener(run: string, marked: boolean[]): string {
  const cut = marked.lastIndexOf(true);
  if (cut <= 0) return run; // all the task's own text
  const taskLeads = run.length - cut;
  // Two or more task leads form the task's own `$${` escape, which extra leads before it keep.
  if (taskLeads >= 2) return run;
  return `\${"${run.slice(0, cut)}"}${run.slice(cut)}`;
}

/** Decodes every string (keys included) in synthesized Terraform JSON. */
export function decodeOutput<T>(value: T): T {
  if (typeof value === "string") return decodeForTerraform(value) as T;
  if (Array.isArray(value)) return value.map((v) => decodeOutput(v)) as T;
  if (value && typeof value === "object") {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[decodeForTerraform(k)] = decodeOutput(v);
    return out as T;
  }
  return value;
}
