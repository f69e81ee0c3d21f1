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

/**
 * The parts `constructId` encoded into `id` (the text the task author passed), or undefined when
 * `id` is not such an encoding or encodes nothing (its parts are as written): a review shows
 * `web-1` for `web_2d_1`. The encoding is a prefix code (a letter or digit, `__`, `_<hex>_`), so
 * reading it left to right is its inverse.
 */
export function constructIdParts(id: string): string[] | undefined {
  const out: string[] = [];
  let escaped = false;
  for (const [i, part] of id.split("-").entries()) {
    if (part === "_x_") {
      out.push("");
      escaped = true;
      continue;
    }
    if (part === "") return undefined;
    let text = "";
    for (let j = 0; j < part.length; ) {
      const c = part[j]!;
      const atStart = i === 0 && text === "";
      if (/[A-Za-z]/.test(c) || (/[0-9]/.test(c) && !atStart)) {
        text += c;
        j++;
        continue;
      }
      if (c !== "_") return undefined;
      if (part[j + 1] === "_") {
        text += "_";
        j += 2;
        escaped = true;
        continue;
      }
      const m = /^_([0-9a-f]{1,6})_/.exec(part.slice(j));
      const code = m ? parseInt(m[1]!, 16) : NaN;
      if (!m || code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff)) return undefined;
      const ch = String.fromCodePoint(code);
      // constructId writes these as they are: an escape of one is not its encoding.
      if (/[A-Za-z_]/.test(ch) || (/[0-9]/.test(ch) && !atStart)) return undefined;
      text += ch;
      j += m[0].length;
      escaped = true;
    }
    out.push(text);
  }
  return escaped ? out : undefined;
}
