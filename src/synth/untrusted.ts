/**
 * Catalog data is untrusted. Terraform evaluates `${…}` and `%{…}` in every JSON string, and cdktf
 * resolves anything shaped like its token markers (`${TfToken[…]}`, `#{TfToken[…]}`,
 * `&{TfToken[…]}`) even inside escaped text. So before task code sees Consul data, each opening
 * sequence `${ %{ #{ &{` gets a private-use SENTINEL between its two characters: nothing in cdktf or
 * Terraform recognises it any more. After synthesis, `decodeOutput` turns `$S{` into Terraform's
 * literal escape `$${`, `%S{` into `%%{`, and `#S{`/`&S{` back into `#{`/`&{`, so the value lands in
 * infrastructure byte-identical to what Consul held. A sentinel already present in the data is
 * doubled, so the encoding is reversible and cannot be forged.
 */
export const SENTINEL = "\uE000";

const ENCODE = /([$%#&])\{|\uE000/g;
const NEEDS_ENCODE = /[$%#&]\{|\uE000/;

/** Encodes one untrusted string (see module doc). */
export function encodeUntrusted(s: string): string {
  if (!NEEDS_ENCODE.test(s)) return s;
  return s.replace(ENCODE, (m: string, lead: string | undefined) => (lead ? `${lead}${SENTINEL}{` : SENTINEL + SENTINEL));
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

/** Turns an encoded string back into the original text (for task code that needs the raw value). */
export function raw(s: string): string {
  if (!s.includes(SENTINEL)) return s;
  return decodeWith(s, (lead) => lead);
}

/** Turns an encoded string into Terraform JSON text that evaluates to the original. */
export function decodeForTerraform(s: string): string {
  if (!s.includes(SENTINEL)) return s;
  return decodeWith(s, (lead) => (lead === "$" || lead === "%" ? lead + lead : lead));
}

function decodeWith(s: string, opening: (lead: string) => string): string {
  let out = "";
  for (let i = 0; i < s.length; i++) {
    const c = s[i]!;
    if (c !== SENTINEL) {
      out += c;
      continue;
    }
    if (s[i + 1] === SENTINEL) {
      out += SENTINEL;
      i++;
      continue;
    }
    // A lone sentinel sits between a lead character (already emitted) and `{`.
    const lead = out.slice(-1);
    out = out.slice(0, -1) + opening(lead);
  }
  return out;
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
