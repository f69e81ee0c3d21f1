import { CtsError } from "../errors/cts-error.ts";

/**
 * The parser of Consul's filter language: a recursive descent over go-bexpr's grammar that
 * checks each selector and operator against what Consul accepts for the field and what cts can
 * evaluate, and reads literals as Go does (strconv.Unquote, RE2 patterns). Evaluation: filter.ts.
 */

/** A match operator (`contains` is `in`, `not contains` is `not in`, as bexpr reads them). */
export type Op = "==" | "!=" | "in" | "not in" | "is empty" | "is not empty" | "matches" | "not matches";
type Kind = "string" | "int" | "list" | "map" | "checks";

/** A match: a selector, an operator and its value (compiled for matches, an integer for the port). */
export interface MatchNode {
  type: "match";
  path: string[];
  op: Op;
  value?: string;
  regexp?: RegExp;
  int?: number;
}

/** A parsed filter expression. */
export type FilterNode = { type: "and" | "or"; left: FilterNode; right: FilterNode } | { type: "not"; operand: FilterNode } | MatchNode;

/** Selectors and their kinds; `Checks.*` is a field of each check. */
const SELECTORS: Record<string, Kind> = {
  "Node.ID": "string",
  "Node.Node": "string",
  "Node.Address": "string",
  "Node.Datacenter": "string",
  "Node.TaggedAddresses": "map",
  "Node.Meta": "map",
  "Service.Kind": "string",
  "Service.ID": "string",
  "Service.Service": "string",
  "Service.Tags": "list",
  "Service.Address": "string",
  "Service.Meta": "map",
  "Service.Port": "int",
  Checks: "checks",
  "Checks.Node": "string",
  "Checks.CheckID": "string",
  "Checks.Name": "string",
  "Checks.Status": "string",
  "Checks.ServiceID": "string",
  "Checks.ServiceName": "string",
};

/** The selectors of a health filter cts knows (Consul's, for service instances). */
export const HEALTH_SELECTORS: readonly string[] = Object.keys(SELECTORS);

/** The operators Consul accepts for each kind of field (others are an error in Consul too). */
const OPERATORS: Record<Kind, readonly Op[]> = {
  string: ["==", "!=", "in", "not in", "matches", "not matches"],
  int: ["==", "!="],
  list: ["in", "not in", "is empty", "is not empty"],
  map: ["in", "not in", "is empty", "is not empty"],
  checks: ["is empty", "is not empty"],
};

function unsupported(source: string, what: string): CtsError {
  return new CtsError(
    "FILTER_UNSUPPORTED",
    "usage",
    `Consul filter '${source}': ${what}. cts evaluates filters offline (Testing, cts synth --input) for the selectors ${Object.keys(SELECTORS).join(", ")} (and a key of a Meta/TaggedAddresses map).`,
  );
}

/** Parses a filter expression; throws FILTER_UNSUPPORTED for syntax errors and selectors or operators cts cannot evaluate. */
export function parseExpression(source: string): FilterNode {
  return new Parser(source).parse();
}

const KEYWORD_END = /[\s)]|$/;

class Parser {
  private pos = 0;
  constructor(private readonly src: string) {}

  parse(): FilterNode {
    const node = this.or();
    this.ws();
    if (this.pos < this.src.length) throw this.fail(`unexpected '${this.src.slice(this.pos, this.pos + 12)}'`);
    return node;
  }

  private fail(what: string): CtsError {
    return unsupported(this.src, `${what} at column ${this.pos + 1}`);
  }

  private ws(): boolean {
    const start = this.pos;
    while (this.pos < this.src.length && /[ \t\r\n]/.test(this.src[this.pos]!)) this.pos++;
    return this.pos > start;
  }

  /** Consumes a keyword preceded by whitespace and followed by whitespace, ')' or the end. */
  private keyword(word: string): boolean {
    const save = this.pos;
    if (this.ws() && this.src.startsWith(word, this.pos) && KEYWORD_END.test(this.src.slice(this.pos + word.length, this.pos + word.length + 1))) {
      this.pos += word.length;
      return true;
    }
    this.pos = save;
    return false;
  }

  private or(): FilterNode {
    const left = this.and();
    return this.keyword("or") ? { type: "or", left, right: this.or() } : left;
  }

  private and(): FilterNode {
    const left = this.not();
    return this.keyword("and") ? { type: "and", left, right: this.and() } : left;
  }

  private not(): FilterNode {
    this.ws();
    if (this.src.startsWith("not", this.pos) && /[ \t\r\n]/.test(this.src[this.pos + 3] ?? "")) {
      this.pos += 3;
      return { type: "not", operand: this.not() };
    }
    return this.primary();
  }

  private primary(): FilterNode {
    this.ws();
    if (this.src[this.pos] === "(") {
      this.pos++;
      const inner = this.or();
      this.ws();
      if (this.src[this.pos] !== ")") throw this.fail("unmatched parenthesis");
      this.pos++;
      return inner;
    }
    return this.match();
  }

  private match(): FilterNode {
    const start = this.pos;
    if (this.src[this.pos] === '"' || this.src[this.pos] === "`" || /[-0-9]/.test(this.src[this.pos] ?? "") || this.looksLikeValueIn()) {
      // `<value> in <selector>`
      const value = this.value();
      const op: Op | undefined = this.keyword("in") ? "in" : this.keyword("not") ? (this.keyword("in") ? "not in" : undefined) : undefined;
      if (!op) throw this.fail("expected 'in' or 'not in' after a value");
      this.ws();
      const path = this.selector();
      return this.build(path, op, value, start);
    }
    const path = this.selector();
    let op: Op | undefined;
    const save = this.pos;
    this.ws();
    if (this.src.startsWith("==", this.pos)) (this.pos += 2), (op = "==");
    else if (this.src.startsWith("!=", this.pos)) (this.pos += 2), (op = "!=");
    else {
      this.pos = save;
      if (this.keyword("contains")) op = "in";
      else if (this.keyword("matches")) op = "matches";
      else if (this.keyword("is")) op = this.keyword("empty") ? "is empty" : this.keyword("not") && this.keyword("empty") ? "is not empty" : undefined;
      else if (this.keyword("not")) op = this.keyword("contains") ? "not in" : this.keyword("matches") ? "not matches" : undefined;
      if (!op) throw this.fail(`expected an operator (==, !=, contains, not contains, matches, not matches, is empty, is not empty) after '${path.join(".")}'`);
    }
    if (op === "is empty" || op === "is not empty") return this.build(path, op, undefined, start);
    this.ws();
    return this.build(path, op, this.value(), start);
  }

  /** An unquoted identifier followed by `in`/`not in` is a value, as in `prod in Service.Tags`. */
  private looksLikeValueIn(): boolean {
    const rest = this.src.slice(this.pos);
    return /^[A-Za-z][A-Za-z0-9_/]*(\.[A-Za-z0-9_/]+)*[ \t\r\n]+(not[ \t\r\n]+)?in[ \t\r\n]/.test(rest);
  }

  private selector(): string[] {
    const m = /^[A-Za-z][A-Za-z0-9_/]*/.exec(this.src.slice(this.pos));
    if (!m) throw this.fail("expected a selector");
    this.pos += m[0].length;
    const path = [m[0]];
    for (;;) {
      if (this.src[this.pos] === ".") {
        const part = /^\.([A-Za-z][A-Za-z0-9_/]*|[0-9]+)/.exec(this.src.slice(this.pos));
        if (!part) throw this.fail("expected a name after '.'");
        this.pos += part[0].length;
        path.push(part[1]!);
      } else if (this.src[this.pos] === "[") {
        this.pos++;
        this.ws();
        const key = this.string();
        this.ws();
        if (this.src[this.pos] !== "]") throw this.fail("unclosed index expression");
        this.pos++;
        path.push(key);
      } else return path;
    }
  }

  private value(): string {
    const c = this.src[this.pos];
    if (c === '"' || c === "`") return this.string();
    const num = /^-?(0|[1-9][0-9]*)(\.[0-9]+)?/.exec(this.src.slice(this.pos));
    if (num) {
      const after = this.src[this.pos + num[0].length];
      if (after !== undefined && !/[ \t\r\n)]/.test(after)) throw this.fail("invalid number literal");
      this.pos += num[0].length;
      return num[0];
    }
    return this.selector().join(".");
  }

  private string(): string {
    const quote = this.src[this.pos];
    if (quote === "`") {
      const end = this.src.indexOf("`", this.pos + 1);
      if (end < 0) throw this.fail("unterminated string literal");
      const text = this.src.slice(this.pos + 1, end);
      this.pos = end + 1;
      return text;
    }
    if (quote !== '"') throw this.fail("expected a quoted string");
    const end = this.src.indexOf('"', this.pos + 1);
    if (end < 0) throw this.fail("unterminated string literal");
    const raw = this.src.slice(this.pos + 1, end);
    const text = unquoteGo(raw);
    if (text === undefined) throw this.fail(`invalid escape in string "${raw}"`);
    this.pos = end + 1;
    return text;
  }

  private build(path: string[], op: Op, value: string | undefined, start: number): FilterNode {
    const written = this.src.slice(start, this.pos).trim();
    const kind = kindOf(path, this.src);
    if (!OPERATORS[kind].includes(op)) throw unsupported(this.src, `operator '${op}' cannot be used on '${path.join(".")}' (Consul refuses it too); '${written}'`);
    const node: MatchNode = { type: "match", path, op, ...(value !== undefined ? { value } : {}) };
    if (kind === "int") {
      if (!/^-?[0-9]+$/.test(value!)) throw unsupported(this.src, `'${value}' is not an integer for '${path.join(".")}'`);
      node.int = Number(value);
    }
    if (op === "matches" || op === "not matches") node.regexp = goRegexp(value!, this.src);
    return node;
  }
}

/** The kind of the field a selector names; a key below a map is a string. */
function kindOf(path: string[], source: string): Kind {
  const joined = path.join(".");
  if (SELECTORS[joined]) return SELECTORS[joined]!;
  const parent = path.slice(0, -1).join(".");
  if (path.length === 3 && SELECTORS[parent] === "map") return "string";
  throw unsupported(source, `selector '${joined}' is not supported`);
}

/**
 * The body of a Go double-quoted string (strconv.Unquote); undefined when an escape is invalid.
 * Go refuses a literal newline there as well.
 */
function unquoteGo(raw: string): string | undefined {
  if (raw.includes("\n")) return undefined;
  let out = "";
  for (let i = 0; i < raw.length; i++) {
    const c = raw[i]!;
    if (c !== "\\") {
      out += c;
      continue;
    }
    const e = raw[++i];
    const simple: Record<string, string> = { a: "\x07", b: "\b", f: "\f", n: "\n", r: "\r", t: "\t", v: "\v", "\\": "\\", '"': '"' };
    if (e !== undefined && simple[e] !== undefined) out += simple[e];
    else if (e === "x" || e === "u" || e === "U") {
      const len = e === "x" ? 2 : e === "u" ? 4 : 8;
      const hex = raw.slice(i + 1, i + 1 + len);
      if (!new RegExp(`^[0-9a-fA-F]{${len}}$`).test(hex)) return undefined;
      const code = parseInt(hex, 16);
      if (e === "x") {
        if (code > 0x7f) return undefined; // a raw byte: not representable as text here
        out += String.fromCharCode(code);
      } else {
        if (code > 0x10ffff || (code >= 0xd800 && code < 0xe000)) return undefined;
        out += String.fromCodePoint(code);
      }
      i += len;
    } else if (e !== undefined && /[0-7]/.test(e)) {
      const oct = raw.slice(i, i + 3);
      if (!/^[0-7]{3}$/.test(oct) || parseInt(oct, 8) > 0x7f) return undefined;
      out += String.fromCharCode(parseInt(oct, 8));
      i += 2;
    } else return undefined;
  }
  return out;
}

/**
 * A Go (RE2) pattern as a JavaScript RegExp. The common subset means the same in both; what
 * differs (inline flags other than a leading (?i)/(?s)/(?m), \z, \A, \Q…\E, POSIX classes,
 * possessive or lookaround syntax Go lacks) is refused rather than guessed.
 */
function goRegexp(pattern: string, source: string): RegExp {
  let body = pattern;
  let flags = "u";
  const lead = /^\(\?([ims]+)\)/.exec(body);
  if (lead) {
    flags += [...new Set(lead[1]!)].join("");
    body = body.slice(lead[0].length);
  }
  if (/\(\?|\\[zAQEpPC]|\[\[:|\\[0-9]/.test(body)) throw unsupported(source, `the pattern '${pattern}' uses RE2 syntax cts does not translate`);
  try {
    return new RegExp(body, flags);
  } catch (cause) {
    throw unsupported(source, `the pattern '${pattern}' is not a valid regular expression (${(cause as Error).message})`);
  }
}
