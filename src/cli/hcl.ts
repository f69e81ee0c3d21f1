import { CtsError } from "../errors.ts";

/** A literal HCL value (no expressions: task files hold data, not code). */
export type HclValue = string | number | boolean | null | HclValue[] | { [key: string]: HclValue };

/** A block: `type "label" … { body }`. */
export interface HclBlock {
  type: string;
  labels: string[];
  body: HclBody;
  line: number;
}

/** Attributes (in order) and blocks of one body. */
export interface HclBody {
  attributes: Map<string, { value: HclValue; line: number }>;
  blocks: HclBlock[];
}

type TokenKind = "ident" | "string" | "number" | "punct" | "eof";
interface Token {
  kind: TokenKind;
  text: string;
  value?: string | number;
  line: number;
  col: number;
}

/**
 * Parses the subset of HCL that CTS task blocks use: attributes with literal values (strings,
 * numbers, booleans, null, lists, objects), blocks with labels, and comments. Interpolation,
 * functions, operators and heredocs are refused with the line they are on.
 */
export function parseHcl(text: string, file = "task file"): HclBody {
  const tokens = tokenize(text, file);
  let pos = 0;
  const peek = (o = 0) => tokens[Math.min(pos + o, tokens.length - 1)]!;
  const next = () => tokens[pos++]!;
  const fail = (t: Token, msg: string): never => {
    throw new CtsError("TASK_FILE_INVALID", "usage", `${file}:${t.line}:${t.col}: ${msg}`);
  };
  const expect = (text: string) => {
    const t = next();
    if (t.kind !== "punct" || t.text !== text) fail(t, `expected '${text}' but found ${describe(t)}.`);
  };

  function body(closing: boolean): HclBody {
    const out: HclBody = { attributes: new Map(), blocks: [] };
    for (;;) {
      const t = peek();
      if (t.kind === "eof") {
        if (closing) fail(t, "a block is not closed: a '}' is missing.");
        return out;
      }
      if (t.kind === "punct" && t.text === "}") {
        if (!closing) fail(t, "unexpected '}' (no block is open).");
        next();
        return out;
      }
      if (t.kind !== "ident") fail(t, `expected an attribute or block name but found ${describe(t)}.`);
      next();
      const after = peek();
      if (after.kind === "punct" && after.text === "=") {
        next();
        if (out.attributes.has(t.text)) fail(t, `'${t.text}' is set twice.`);
        out.attributes.set(t.text, { value: value(), line: t.line });
        continue;
      }
      const labels: string[] = [];
      while (peek().kind === "string" || (peek().kind === "ident" && !(peek(1).kind === "punct" && peek(1).text === "="))) {
        const label = next();
        labels.push(label.kind === "string" ? String(label.value) : label.text);
      }
      expect("{");
      out.blocks.push({ type: t.text, labels, body: body(true), line: t.line });
    }
  }

  function value(): HclValue {
    const t = next();
    if (t.kind === "string" || t.kind === "number") return t.value!;
    if (t.kind === "ident") {
      if (t.text === "true") return true;
      if (t.text === "false") return false;
      if (t.text === "null") return null;
      return fail(t, `'${t.text}' is an expression; task files take literal values only (quote strings: "${t.text}").`);
    }
    if (t.text === "[") {
      const list: HclValue[] = [];
      while (!(peek().kind === "punct" && peek().text === "]")) {
        list.push(value());
        if (peek().kind === "punct" && peek().text === ",") next();
        else if (!(peek().kind === "punct" && peek().text === "]")) fail(peek(), `expected ',' or ']' in a list but found ${describe(peek())}.`);
      }
      next();
      return list;
    }
    if (t.text === "{") {
      const obj: { [key: string]: HclValue } = {};
      while (!(peek().kind === "punct" && peek().text === "}")) {
        const k = next();
        if (k.kind !== "ident" && k.kind !== "string") fail(k, `expected an object key but found ${describe(k)}.`);
        const sep = next();
        if (sep.kind !== "punct" || (sep.text !== "=" && sep.text !== ":")) fail(sep, `expected '=' after the key '${k.text}' but found ${describe(sep)}.`);
        obj[String(k.value ?? k.text)] = value();
        if (peek().kind === "punct" && peek().text === ",") next();
      }
      next();
      return obj;
    }
    return fail(t, `expected a value but found ${describe(t)}.`);
  }

  return body(false);
}

function describe(t: Token): string {
  return t.kind === "eof" ? "the end of the file" : `'${t.text.slice(0, 30)}'`;
}

function tokenize(text: string, file: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  let line = 1;
  let lineStart = 0;
  const fail = (msg: string, at = i): never => {
    throw new CtsError("TASK_FILE_INVALID", "usage", `${file}:${line}:${at - lineStart + 1}: ${msg}`);
  };
  while (i < text.length) {
    const c = text[i]!;
    const col = i - lineStart + 1;
    if (c === "\n") {
      line++;
      lineStart = ++i;
    } else if (/\s/.test(c)) i++;
    else if (c === "#" || (c === "/" && text[i + 1] === "/")) while (i < text.length && text[i] !== "\n") i++;
    else if (c === "/" && text[i + 1] === "*") {
      const end = text.indexOf("*/", i + 2);
      if (end < 0) fail("a /* comment is not closed.");
      for (; i < end + 2; i++) {
        if (text[i] !== "\n") continue;
        line++;
        lineStart = i + 1;
      }
    } else if (c === '"') {
      let s = "";
      const startLine = line;
      for (i++; ; i++) {
        const d = text[i];
        if (d === undefined || d === "\n") fail(`a string starting on line ${startLine} is not closed.`);
        if (d === '"') break;
        if (d === "\\") {
          const e = text[++i];
          const map: Record<string, string> = { n: "\n", t: "\t", r: "\r", '"': '"', "\\": "\\" };
          if (e === "u") {
            const hex = text.slice(i + 1, i + 5);
            if (!/^[0-9a-fA-F]{4}$/.test(hex)) fail("a \\u escape needs 4 hex digits.");
            s += String.fromCharCode(parseInt(hex, 16));
            i += 4;
          } else if (e !== undefined && map[e] !== undefined) s += map[e];
          else fail(`unknown escape '\\${e ?? ""}' in a string.`);
        } else if ((d === "$" || d === "%") && text[i + 1] === "{") {
          fail(`'${d}{' starts a template, which task files do not support. Write '${d}${d}{' for a literal '${d}{'.`);
        } else if ((d === "$" || d === "%") && text[i + 1] === d && text[i + 2] === "{") {
          s += `${d}{`;
          i += 2;
        } else s += d;
      }
      i++;
      tokens.push({ kind: "string", text: s, value: s, line, col });
    } else if (c === "<" && text[i + 1] === "<") fail("heredoc strings are not supported in task files. Use a quoted string with \\n.");
    else if (/[-0-9]/.test(c)) {
      const m = /^-?\d+(\.\d+)?([eE][+-]?\d+)?/.exec(text.slice(i));
      if (!m) fail(`unexpected '${c}'.`);
      tokens.push({ kind: "number", text: m![0], value: Number(m![0]), line, col });
      i += m![0].length;
    } else if (/[A-Za-z_]/.test(c)) {
      const m = /^[A-Za-z_][A-Za-z0-9_-]*/.exec(text.slice(i))!;
      tokens.push({ kind: "ident", text: m[0], line, col });
      i += m[0].length;
    } else if ("={}[],:".includes(c)) {
      tokens.push({ kind: "punct", text: c, line, col });
      i++;
    } else fail(`unexpected '${c}'. Task files take literal values only.`);
  }
  tokens.push({ kind: "eof", text: "", line, col: i - lineStart + 1 });
  return tokens;
}

/** A body as plain JSON: attributes as they are, blocks as `{type: {label: {...}}}` objects (for errors and tests). */
export function attributesOf(body: HclBody): Record<string, HclValue> {
  const out: Record<string, HclValue> = {};
  for (const [k, v] of body.attributes) out[k] = v.value;
  return out;
}
