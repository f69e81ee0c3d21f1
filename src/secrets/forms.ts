/**
 * How one secret can appear in text cts shows, as a regular expression source. A value is printed
 * raw by some, and escaped by every layer that quotes it: Terraform's `-json` output and provider
 * logs (Go's encoding/json: `\u003c` for `<`, `\u0026`, `\u2028`, `\ufffd` for invalid UTF-8),
 * our own JSON (JSON.stringify, pino), Go's `%q` and HCL (`\x00`, `\U0001f600`, `$${`), URLs
 * (`%3C` in either case, `+` for a space), and a JSON line inside a JSON line (a provider's log line
 * in our `--log-format json`). Each character may take any of its forms, so one pattern covers
 * every encoding and every mix of them.
 *
 * Every repetition is bounded and each alternative after a backslash starts with a distinct
 * character, so matching stays linear in the text's length (a line of backslashes from catalog
 * data cannot make redaction slow).
 */

/** Backslashes before an escape: 1 (JSON), 2 or 3 (JSON inside JSON), up to 7 (three levels of `\"`). */
const ESCAPE = "\\\\{1,8}";

/** Go's and JSON's one-letter escapes (after the backslash). */
const SHORT: Record<number, string> = { 0x22: '"', 0x2f: "\\/", 0x07: "a", 0x08: "b", 0x09: "t", 0x0a: "n", 0x0b: "v", 0x0c: "f", 0x0d: "r" };

/** A hex digit string that matches in either case (`3[cC]`): Go writes lower case, URLs upper. */
function hexAnyCase(hex: string): string {
  let out = "";
  for (const c of hex) out += c >= "a" && c <= "f" ? `[${c}${c.toUpperCase()}]` : c;
  return out;
}

const hex = (n: number, width: number) => hexAnyCase(n.toString(16).padStart(width, "0"));

/** One UTF-16 code unit as a literal in a pattern (escaped unless a plain letter or digit). */
function literal(unit: number): string {
  return (unit >= 0x30 && unit <= 0x39) || (unit >= 0x41 && unit <= 0x5a) || (unit >= 0x61 && unit <= 0x7a) ? String.fromCharCode(unit) : `\\u${unit.toString(16).padStart(4, "0")}`;
}

/** `%XX` for each UTF-8 byte of a code point (what encodeURIComponent and Go's url package write). */
function percent(codePoint: number): string {
  let out = "";
  for (const b of Buffer.from(String.fromCodePoint(codePoint), "utf8")) out += `%${hex(b, 2)}`;
  return out;
}

const REPLACEMENT = 0xfffd;

/** The alternatives for one character that is not a backslash. `escape` is the pattern for the backslashes before an escape. */
function character(text: string, i: number, escape: string): { pattern: string; width: number } {
  const unit = text.charCodeAt(i);
  const next = text.charCodeAt(i + 1);
  const alts: string[] = [];
  if (unit >= 0xd800 && unit <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) {
    // A character outside the BMP: two code units (each raw or `\uXXXX`), Go's `\U0001f600`, or 4 URL bytes.
    const codePoint = text.codePointAt(i)!;
    // The code units last: the URL and `\U` spellings are longer, and must win at a secret's end.
    alts.push(`${escape}U${hex(codePoint, 8)}`, percent(codePoint), `(?:${literal(unit)}|${escape}u${hex(unit, 4)})(?:${literal(next)}|${ESCAPE}u${hex(next, 4)})`);
    return { pattern: `(?:${alts.join("|")})`, width: 2 };
  }
  alts.push(literal(unit), `${escape}u${hex(unit, 4)}`);
  if (unit >= 0xd800 && unit <= 0xdfff) {
    // A lone surrogate reaches Terraform (through the environment, as UTF-8) as U+FFFD.
    alts.push(literal(REPLACEMENT), `${escape}u${hex(REPLACEMENT, 4)}`, percent(REPLACEMENT));
  } else {
    alts.push(percent(unit));
  }
  if (SHORT[unit]) alts.push(`${escape}${SHORT[unit]}`);
  if (unit < 0x20 || unit === 0x7f) alts.push(`${escape}x${hex(unit, 2)}`);
  if (unit === 0x20) alts.push("\\+");
  // HCL doubles the opener of `${` and `%{` to keep them literal.
  if ((unit === 0x24 || unit === 0x25) && next === 0x7b) alts.push(literal(unit) + literal(unit));
  // The raw character last: it is the shortest match, and at the end of a secret the first
  // alternative that matches wins, so a raw `%` must not stop short of `%25` (leaving "25" visible).
  const raw = literal(unit);
  return { pattern: `(?:${[...alts.filter((a) => a !== raw), raw].join("|")})`, width: 1 };
}

/**
 * A run of `n` backslashes: each one raw, doubled by each level of quoting, `\u005c`, or `%5C`.
 * The exact counts come first, longest first (8n, 4n, 2n, n: three, two, one or no levels of
 * quoting): at the end of a secret a run of any length would also take the backslash that escapes
 * the next character (`\\` + `\"` in JSON), and the redacted document would no longer parse. An
 * exact run never stops before a `u005c` (the `\u005c` spelling is the general pattern's).
 */
function backslashes(n: number): string {
  const exact = [8 * n, 4 * n, 2 * n, n].map((k) => `\\\\{${k}}(?!\\\\*u005[cC])`);
  return `(?:${exact.join("|")}|(?:\\\\|%5[cC])(?:\\\\|u005[cC]|%5[cC]){${n - 1},${8 * n}})`;
}

/** The regular expression source that matches `value` in any of its forms. */
export function secretPattern(value: string): string {
  let out = "";
  let afterBackslashes = false;
  for (let i = 0; i < value.length; ) {
    if (value.charCodeAt(i) === 0x5c) {
      let n = 0;
      while (value.charCodeAt(i + n) === 0x5c) n++;
      out += backslashes(n);
      i += n;
      afterBackslashes = true;
      continue;
    }
    // Right after a run of backslashes the run's pattern has taken the escape's backslashes too.
    const { pattern, width } = character(value, i, afterBackslashes ? "" : ESCAPE);
    out += pattern;
    i += width;
    afterBackslashes = false;
  }
  return out;
}

/**
 * The parts of `value`'s base64 (standard and URL-safe) that do not depend on what surrounds it,
 * for each of the three offsets it can start at (HTTP basic auth in a provider's debug log).
 * Parts shorter than `minLength` are left out: they would match ordinary words.
 */
export function base64Forms(value: string, minLength: number): string[] {
  const bytes = Buffer.from(value, "utf8");
  const out = new Set<string>();
  for (let offset = 0; offset < 3; offset++) {
    const encoded = Buffer.concat([Buffer.alloc(offset), bytes]).toString("base64").replace(/=+$/, "");
    // Characters that mix the value's bits with the padding before it, or with what follows it.
    const head = offset === 0 ? 0 : offset + 1;
    const tail = (offset + bytes.length) % 3 === 0 ? 0 : 1;
    const core = encoded.slice(head, encoded.length - tail);
    if (core.length < minLength) continue;
    out.add(core);
    out.add(core.replace(/\+/g, "-").replace(/\//g, "_"));
  }
  return [...out];
}
