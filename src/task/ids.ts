/**
 * Construct ids from catalog data. cdktf silently drops characters outside `[A-Za-z0-9_-]` from
 * top-level ids, so `a.b` and `ab` would become one resource. This encoding is injective: letters
 * and digits stay, `_` becomes `__`, any other character becomes `_<hex code point>_`, an empty
 * part becomes `_x_`, and parts are joined with `-`. Distinct inputs always give distinct ids, and
 * every id is a valid Terraform name (it never starts with a digit or `-`).
 */
export function constructId(...parts: Array<string | number>): string {
  if (parts.length === 0) throw new Error("constructId needs at least one part");
  return parts.map((p, i) => encodePart(String(p), i === 0)).join("-");
}

function encodePart(part: string, first: boolean): string {
  if (part === "") return "_x_";
  let out = "";
  for (const ch of part) {
    const atStart = first && out === "";
    if (/[A-Za-z]/.test(ch) || (/[0-9]/.test(ch) && !atStart)) out += ch;
    else if (ch === "_") out += "__";
    else out += `_${ch.codePointAt(0)!.toString(16)}_`;
  }
  return out;
}
