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
 * Guaranteed for whole catalog strings (as the task received them, or from `untrusted()`) combined
 * in any order with each other and task text. Not guaranteed when task code cuts a catalog string
 * (slice, split, trim, replace): a new edge carries no MARK. Cut `raw(v)` instead and pass each piece
 * through `untrusted()`; parse JSON from `raw(v)` too. If an empty catalog string sits between a
 * task `$` and a task `{`, the resulting `${` is the task's own text. The only number from Consul is
 * a port (an integer), far from cdktf's numeric token range (~-1.9e289); parse catalog strings into
 * numbers with a bound.
 * Not covered here: cdktf writes the arguments of `Fn.join`, `Fn.format`, … as HCL string literals
 * without escaping `"` or `\`, so a catalog string with a quote can end the literal there.
 */
export const MARK = "\uE000";
/** Prefixes a literal U+E000/U+E001 in catalog data. */
export const ESC = "\uE001";

const LEADS = "$%#&";
const NEEDS_ENCODE = /^\{|[$%#&]\{|[$%#&]$|[\uE000\uE001]/;

/** Encodes one untrusted string (see module doc). */
export function encodeUntrusted(s: string): string {
  if (!NEEDS_ENCODE.test(s)) return s;
  let out = "";
  for (let i = 0; i < s.length; i++) {
    const c = s[i]!;
    if (c === MARK || c === ESC) out += ESC + c;
    else if (c === "{" && (i === 0 || LEADS.includes(s[i - 1]!))) out += MARK + c;
    else if (i === s.length - 1 && LEADS.includes(c)) out += c + MARK;
    else out += c;
  }
  return out;
}

/** Recursively encodes every string (keys included) in plain data from Consul. */
export function encodeData<T>(value: T): T {
  if (typeof value === "string") return encodeUntrusted(value) as T;
  if (Array.isArray(value)) return value.map((v) => encodeData(v)) as T;
  if (value && typeof value === "object") {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[encodeUntrusted(k)] = encodeData(v);
    return out as T;
  }
  return value;
}

/**
 * Marks data derived from catalog strings as untrusted again: pieces of `raw(v).split(",")`, or
 * `JSON.parse(raw(v))` (a JSON object in KV starts with `{`, which carries a MARK).
 */
export const untrusted: <T>(value: T) => T = encodeData;

/** Turns an encoded string back into the original text (for task code that needs the raw value). */
export function raw(s: string): string {
  if (!s.includes(MARK) && !s.includes(ESC)) return s;
  return split(s).chars.join("");
}

/** The text without MARKs and ESCs, and for each char whether a MARK came right before it. */
function split(s: string): { chars: string[]; marked: boolean[] } {
  const chars: string[] = [];
  const marked: boolean[] = [];
  let pending = false;
  for (let i = 0; i < s.length; i++) {
    let c = s[i]!;
    if (c === MARK) {
      pending = true;
      continue;
    }
    if (c === ESC) {
      const next = s[i + 1];
      if (next !== MARK && next !== ESC) continue; // a stray ESC (cut off by task code) escapes nothing
      c = next;
      i++;
    }
    chars.push(c);
    marked.push(pending);
    pending = false;
  }
  return { chars, marked };
}

/** Turns an encoded string into Terraform JSON text that evaluates to the original. */
export function decodeForTerraform(s: string): string {
  if (!s.includes(MARK) && !s.includes(ESC)) return s;
  const { chars, marked } = split(s);
  let out = "";
  for (let i = 0; i < chars.length; ) {
    const c = chars[i]!;
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
    else out += beforeLiveOpener(run, marked.slice(i, end));
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
