import { configError } from "./hcl-schema.ts";

/**
 * CTS reads its config files with HCL 1 (hashicorp/hcl v1: its scanner's scanString/scanHeredoc,
 * strconv.Unquote and token.unindentHeredoc), whose strings mean something else than HCL 2's:
 *
 * - A quoted string's `${…}` is text, copied as written up to its matching `}` (braces nest): no
 *   escape inside it is decoded, a `"` inside it does not end the string, and it may span lines.
 * - `%{` is plain text. There is no `$$` escape: in `$${x}` the first `$` is a plain character and
 *   the `${x}` after it is copied, so `$${` stays `$${` (and `%%{` stays `%%{`).
 * - Outside `${…}` the escapes are Go's: `\a \b \f \n \r \t \v \\ \"`, `\xNN`, `\NNN` (octal, at
 *   most 377), `\uNNNN`, `\UNNNNNNNN`; any other (`\'`, `\$`, `\q`) is refused.
 * - A heredoc is its lines as written: no escapes, no templates. It ends at a line holding only its
 *   marker (spaces before it allowed) and holds everything before that marker. `<<-` removes the
 *   end marker's indentation from each line when every line starts with it, and else keeps the
 *   lines as they are (HCL 2's `<<-` removes the smallest indentation instead).
 *
 * `hcl1Strings` rewrites each HCL 1 string and heredoc into an HCL 2 quoted string with the same
 * value (`${` and `%{` written as escapes), so the HCL 2 reader takes it as the text CTS
 * reads. Everything else is left as it is. Line numbers stay: the newlines a string or heredoc
 * spanned follow it. Our own task files are not rewritten: they are HCL 2, where `${` must be `$${`.
 */
export function hcl1Strings(text: string, file: string): string {
  let out = "";
  let i = 0;
  const lineAt = (pos: number) => text.slice(0, pos).split("\n").length;
  const fail = (pos: number, msg: string): never => {
    throw configError(file, lineAt(pos), msg);
  };
  while (i < text.length) {
    const c = text[i]!;
    if (c === "#" || text.startsWith("//", i)) {
      const end = text.indexOf("\n", i);
      const stop = end === -1 ? text.length : end;
      out += text.slice(i, stop);
      i = stop;
    } else if (text.startsWith("/*", i)) {
      const end = text.indexOf("*/", i + 2);
      const stop = end === -1 ? text.length : end + 2;
      out += text.slice(i, stop);
      i = stop;
    } else if (c === '"') {
      const s = quoted(text, i, fail);
      // Unterminated: left as written, for the HCL reader to report with its place.
      if (!s) return out + text.slice(i);
      out += hcl2String(s.value) + "\n".repeat(newlines(text, i, s.end));
      i = s.end;
    } else if (text.startsWith("<<", i)) {
      const h = heredoc(text, i);
      if (!h) {
        out += "<<";
        i += 2;
        continue;
      }
      out += hcl2String(h.value) + "\n".repeat(newlines(text, i, h.end));
      i = h.end;
    } else {
      out += c;
      i++;
    }
  }
  return out;
}

const newlines = (text: string, from: number, to: number): number => text.slice(from, to).split("\n").length - 1;

const GO_ESCAPES: Record<string, string> = { a: "\x07", b: "\b", f: "\f", n: "\n", r: "\r", t: "\t", v: "\v", "\\": "\\", '"': '"' };

/** The HCL 1 string starting at `start` (its `"`): its value and the index after its closing quote; undefined when it is not closed. */
function quoted(text: string, start: number, fail: (pos: number, msg: string) => never): { value: string; end: number } | undefined {
  let value = "";
  let braces = 0;
  for (let i = start + 1; i < text.length; ) {
    const c = text[i]!;
    if (c === "\n" && braces === 0) return undefined;
    if (c === '"' && braces === 0) return { value, end: i + 1 };
    if (c === "\\") {
      const e = escapeAt(text, i);
      if (typeof e === "string") return fail(i, e);
      // Inside `${…}` HCL 1 copies the text as written.
      value += braces > 0 ? text.slice(i, i + e.length) : e.value;
      i += e.length;
      continue;
    }
    if (braces === 0 && c === "$" && text[i + 1] === "{") {
      braces = 1;
      value += "${";
      i += 2;
      continue;
    }
    if (braces > 0 && c === "{") braces++;
    else if (braces > 0 && c === "}") braces--;
    value += c;
    i++;
  }
  return undefined;
}

const ESCAPES_TAKEN = "\\n \\t \\r \\\" \\\\ \\a \\b \\f \\v \\xNN \\NNN (octal) \\uNNNN \\UNNNNNNNN";

/** A Go escape at `i` (its backslash): the character it stands for and its length, or why it is refused. */
function escapeAt(text: string, i: number): { value: string; length: number } | string {
  const e = text[i + 1] ?? "";
  if (e in GO_ESCAPES) return { value: GO_ESCAPES[e]!, length: 2 };
  const hex = { x: 2, u: 4, U: 8 }[e as "x" | "u" | "U"];
  const octal = /^[0-7]{3}$/.test(text.slice(i + 1, i + 4));
  const digits = hex !== undefined ? text.slice(i + 2, i + 2 + hex) : octal ? text.slice(i + 1, i + 4) : undefined;
  const shown = `\\${e}${hex !== undefined ? digits : octal ? text.slice(i + 2, i + 4) : ""}`;
  if (digits === undefined || (hex !== undefined && !new RegExp(`^[0-9a-fA-F]{${hex}}$`).test(digits))) {
    return `'${shown}' is not an escape in a string. CTS config files are HCL 1, whose escapes are ${ESCAPES_TAKEN}.`;
  }
  const code = parseInt(digits, hex !== undefined ? 16 : 8);
  if (code > 0x10ffff) return `'${shown}' is beyond Unicode.`;
  // `\xNN` and `\NNN` are one byte in Go: above 0x7f that byte alone is not UTF-8 text.
  if ((e === "x" || octal) && code > 0x7f) return `'${shown}' is a single byte that is not UTF-8 text; write the character itself or \\uNNNN.`;
  return { value: String.fromCodePoint(code), length: 2 + (hex ?? 2) };
}

/** The HCL 1 heredoc starting at `start` (its `<<`): its value and the index after its end marker; undefined when it is not one. */
function heredoc(text: string, start: number): { value: string; end: number } | undefined {
  const head = /^<<(-?)([A-Za-z0-9_]+)\r?\n/.exec(text.slice(start, start + 300));
  if (!head) return undefined;
  const [, indent, marker] = head;
  const bodyStart = start + head[0].length;
  for (let lineStart = bodyStart; lineStart < text.length; ) {
    const nl = text.indexOf("\n", lineStart);
    const lineEnd = nl === -1 ? text.length : nl;
    const line = text.slice(lineStart, lineEnd).replace(/\r+$/, "");
    const m = /^(\s*)([A-Za-z0-9_]+)$/.exec(line);
    if (m && m[2] === marker) {
      // Everything before the end marker, the spaces before it included (as HCL 1 keeps them).
      const raw = text.slice(bodyStart, lineStart + m[1]!.length);
      return { value: indent ? unindent(raw, m[1]!) : raw, end: lineStart + line.length };
    }
    if (nl === -1) break;
    lineStart = nl + 1;
  }
  return undefined;
}

/** `<<-`: the end marker's indentation off each line when every line has it; else the lines as written, without that indentation at the end. */
function unindent(raw: string, prefix: string): string {
  const lines = raw.split("\n");
  if (!lines.every((l) => l.startsWith(prefix))) return raw.replace(/[ \t]+$/, "");
  return lines.map((l, k) => (k === lines.length - 1 ? "" : l.slice(prefix.length))).join("\n");
}

/**
 * A value as an HCL 2 quoted string that reads back as exactly that text. A `${` or `%{` is written
 * `\u0024{` / `\u0025{`, not `$${` / `%%{`: after another `$` (HCL 1's `$${`), `$$${` is read
 * differently by HCL 2 readers (Terraform takes it as `$${`, the tree-sitter grammar as `$$` and a
 * template); an escape is literal for all of them.
 */
function hcl2String(value: string): string {
  return JSON.stringify(value)
    .replace(/\\(.)/g, (m, c: string) => (c === "b" ? "\\u0008" : c === "f" ? "\\u000c" : m))
    .replace(/([$%])\{/g, (_, c: string) => `${c === "$" ? "\\u0024" : "\\u0025"}{`);
}
