import { randomBytes } from "node:crypto";
import { CtsError } from "../errors/cts-error.ts";

/**
 * Literal text in Terraform JSON. Every string in Terraform JSON is a template: `${…}` and `%{…}`
 * run code, and inside a `${…}` a string literal ends at a `"`. Task code builds strings from
 * catalog data (which task code sees exactly as Consul holds it) and from its own text; both are
 * literal. Only cdktf's expressions (references, `Fn.*`, iterators, `expression()`) are live.
 *
 * During a synthesis, the cdktf hooks (`cdktf-literals.ts`) replace each piece of literal text
 * with a placeholder from a `LiteralTable` at the point cdktf writes it: a private-use OPEN, the
 * table's random nonce, the index in private-use digits, CLOSE. Nothing cdktf does to a string
 * (its token and number scans, its quoting) can see or change text inside a placeholder, and data
 * cannot forge one (it does not know the nonce). The text a cdktf expression renders goes behind a
 * trusted placeholder, so that cdktf resolving a string a second time cannot mistake it for typed
 * text. `write` then turns each string of the output
 * into Terraform text: the expression text around placeholders is cdktf's and kept; each
 * placeholder becomes its text escaped for where it landed.
 */
const OPEN = "\uE000";
const CLOSE = "\uE001";
/** Closes a placeholder for expression text cdktf rendered (kept, never escaped). */
const CLOSE_TRUSTED = "\uE002";
/** Nonce chars: U+E010…U+E01F (one per hex digit); index digits: U+E020…U+E029. */
const NONCE_BASE = 0xe010;
const DIGIT_BASE = 0xe020;
const NONCE_LENGTH = 8;
const HAS_MARKER = /[\uE000-\uE002]/;

/** The literal texts of one synthesis, each behind a placeholder. */
export class LiteralTable {
  private readonly texts: string[] = [];
  private readonly trustedTexts: string[] = [];
  private readonly nonce: string;
  private readonly cache = new Map<string, string>();
  private readonly trustedCache = new Map<string, string>();

  constructor() {
    const bytes = randomBytes(NONCE_LENGTH);
    let nonce = "";
    for (let i = 0; i < NONCE_LENGTH; i++) nonce += String.fromCharCode(NONCE_BASE + (bytes[i]! & 0x0f));
    this.nonce = nonce;
  }

  /**
   * The placeholder text for literal `text`. Placeholders of this table already in `text` are kept
   * (marking is idempotent); everything else in it is literal.
   */
  mark(text: string): string {
    if (text === "") return "";
    if (!text.includes(OPEN)) return this.placeholder(text);
    let out = "";
    let from = 0;
    for (let i = text.indexOf(OPEN); i !== -1; i = text.indexOf(OPEN, i + 1)) {
      const end = this.placeholderEnd(text, i);
      if (end === -1) continue;
      if (i > from) out += this.placeholder(text.slice(from, i));
      out += text.slice(i, end);
      from = end;
      i = end - 1;
    }
    if (from < text.length) out += this.placeholder(text.slice(from));
    return out;
  }

  /** A placeholder for expression text cdktf rendered (placeholders inside it stay as they are). */
  trusted(text: string): string {
    if (text === "") return "";
    let ph = this.trustedCache.get(text);
    if (ph !== undefined) return ph;
    ph = OPEN + this.nonce + digitsOf(this.trustedTexts.push(text) - 1) + CLOSE_TRUSTED;
    this.trustedCache.set(text, ph);
    return ph;
  }

  /**
   * Turns one output string into Terraform text (see module doc). `live` receives each top-level
   * `${…}`/`%{…}` the written text opens, as written: cdktf's expressions, never literal text.
   */
  write(s: string, live?: string[]): string {
    if (!HAS_MARKER.test(s)) return s;
    const pieces = this.split(s);
    if (pieces.length === 1 && pieces[0]!.literal) return templateText(pieces[0]!.text, "", "");
    return new TemplateWriter(pieces, live).run();
  }

  /** Writes every string (keys too) of synthesized output. */
  writeDeep<T>(value: T): T {
    return mapStrings(value, (s) => (HAS_MARKER.test(s) ? this.write(s) : s));
  }

  /**
   * Like writeDeep, and records where the task's own expressions are: for each string (or key)
   * that opens one, its JSON path (`ownExpressionKey`) → the expressions as written.
   */
  writeDeepRecorded<T>(value: T, own: OwnExpressions): T {
    const walk = (v: unknown, path: string[]): unknown => {
      if (typeof v === "string") return this.writeAt(v, path, own);
      if (typeof v !== "object" || v === null) return v;
      if (Array.isArray(v)) return v.map((x, i) => walk(x, [...path, String(i)]));
      const out: Record<string, unknown> = {};
      for (const k of Object.keys(v)) {
        const key = this.writeAt(k, [...path, k], own, true);
        setOwn(out, key, walk((v as Record<string, unknown>)[k], [...path, key]));
      }
      return out;
    };
    return walk(value, []) as T;
  }

  private writeAt(s: string, path: string[], own: OwnExpressions, key = false): string {
    if (!HAS_MARKER.test(s)) return s;
    const live: string[] = [];
    const out = this.write(s, live);
    if (live.length) own[ownExpressionKey(key ? [...path.slice(0, -1), out] : path, key)] = live;
    return out;
  }

  private placeholder(text: string): string {
    let ph = this.cache.get(text);
    if (ph !== undefined) return ph;
    ph = OPEN + this.nonce + digitsOf(this.texts.push(text) - 1) + CLOSE;
    this.cache.set(text, ph);
    return ph;
  }

  /** Index just past the placeholder starting at `at`, or -1 if none of this table starts there. */
  private placeholderEnd(s: string, at: number): number {
    if (s.slice(at + 1, at + 1 + NONCE_LENGTH) !== this.nonce) return -1;
    let i = at + 1 + NONCE_LENGTH;
    const digitsFrom = i;
    while (i < s.length && s.charCodeAt(i) >= DIGIT_BASE && s.charCodeAt(i) < DIGIT_BASE + 10) i++;
    if (i === digitsFrom || (s[i] !== CLOSE && s[i] !== CLOSE_TRUSTED)) return -1;
    return i + 1;
  }

  private textAt(s: string, at: number, end: number): { text: string; trusted: boolean } {
    let index = 0;
    for (let i = at + 1 + NONCE_LENGTH; i < end - 1; i++) index = index * 10 + (s.charCodeAt(i) - DIGIT_BASE);
    const trusted = s[end - 1] === CLOSE_TRUSTED;
    return { text: (trusted ? this.trustedTexts : this.texts)[index]!, trusted };
  }

  /** Expression text and literals; adjacent literals are one literal. */
  private split(s: string, pieces: Piece[] = []): Piece[] {
    const push = (literal: boolean, text: string) => {
      const last = pieces[pieces.length - 1];
      if (last && last.literal === literal) last.text += text;
      else if (text !== "" || literal) pieces.push({ literal, text });
    };
    let from = 0;
    for (let i = 0; i < s.length; i++) {
      const c = s[i];
      if (c !== OPEN && c !== CLOSE) continue;
      const end = c === OPEN ? this.placeholderEnd(s, i) : -1;
      // A marker char outside a placeholder of this table can only be data that reached cdktf's
      // own expression text: refuse rather than guess what it meant.
      if (end === -1) throw unsafe("catalog or task text reached a Terraform expression without being marked as literal text");
      if (i > from) push(false, s.slice(from, i));
      const { text, trusted } = this.textAt(s, i, end);
      // Rendered expressions nest only as deep as the task's own code does.
      if (trusted) this.split(text, pieces);
      else push(true, text);
      from = end;
      i = end - 1;
    }
    if (from < s.length) push(false, s.slice(from));
    return pieces;
  }
}

function digitsOf(index: number): string {
  let digits = "";
  for (const d of String(index)) digits += String.fromCharCode(DIGIT_BASE + d.charCodeAt(0) - 48);
  return digits;
}

interface Piece {
  literal: boolean;
  text: string;
}

type Mode = { kind: "text"; quoted: boolean } | { kind: "expr"; depth: number };

/**
 * Walks expression text (cdktf's, trusted) keeping track of where it is: template text at the top,
 * a live `${…}`/`%{…}`, or a quoted string inside one (itself a template). Literals are escaped
 * for the place they land in and for their neighbours.
 */
class TemplateWriter {
  private out = "";
  private readonly modes: Mode[] = [{ kind: "text", quoted: false }];
  /** Where the top-level expression being written started. */
  private openedAt = -1;

  constructor(
    private readonly pieces: Piece[],
    private readonly live?: string[],
  ) {}

  run(): string {
    for (let p = 0; p < this.pieces.length; p++) {
      const piece = this.pieces[p]!;
      if (piece.literal) this.literal(piece.text, this.pieces[p + 1]?.text ?? "");
      else this.expression(piece.text);
    }
    return this.out;
  }

  private get mode(): Mode {
    return this.modes[this.modes.length - 1]!;
  }

  private literal(text: string, next: string): void {
    const mode = this.mode;
    if (mode.kind === "expr") {
      // cdktf quotes every string it writes into an expression; bare text here would be code.
      if (!/^[A-Za-z0-9_.-]*$/.test(text)) throw unsafe("a string value landed in a Terraform expression outside a string literal");
      this.out += text;
      return;
    }
    this.out += templateText(text, this.out, next, mode.quoted);
  }

  private expression(text: string): void {
    for (let i = 0; i < text.length; i++) {
      const c = text[i]!;
      const mode = this.mode;
      if (mode.kind === "expr") {
        if (c === '"') this.modes.push({ kind: "text", quoted: true });
        else if (c === "{") mode.depth++;
        else if (c === "}") {
          if (mode.depth === 0) this.modes.pop();
          else mode.depth--;
        }
        this.out += c;
        if (this.modes.length === 1 && this.openedAt >= 0) {
          this.live?.push(this.out.slice(this.openedAt));
          this.openedAt = -1;
        }
        continue;
      }
      if (mode.quoted && c === "\\") {
        this.out += c + (text[i + 1] ?? "");
        i++;
        continue;
      }
      if (mode.quoted && c === '"') {
        this.modes.pop();
        this.out += c;
        continue;
      }
      if (c === "$" || c === "%") {
        let end = i;
        while (text[end] === c) end++;
        // Exactly one lead before `{` opens; more are an escape (n leads read as n-1, then `{`).
        if (text[end] === "{" && end - i === 1) {
          if (this.modes.length === 1) this.openedAt = this.out.length;
          this.out += c + "{";
          this.modes.push({ kind: "expr", depth: 0 });
          i = end;
          continue;
        }
        this.out += text.slice(i, end);
        i = end - 1;
        continue;
      }
      this.out += c;
    }
  }
}

/**
 * Literal `text` as Terraform template text (`quoted`: inside a string literal of an expression,
 * where HCL's string escapes apply too). `before` is what was written before it, `next` the
 * expression text after it: a lead of ours must not join theirs, nor theirs our `{`.
 */
export function templateText(text: string, before: string, next: string, quoted = false): string {
  const last = before[before.length - 1];
  // Most text has no lead: only CRs (template text) or HCL's string escapes (quoted) to write.
  if (!LEADS.test(text) && !((last === "$" || last === "%") && (text[0] === "{" || text[0] === "\r"))) {
    if (quoted) return QUOTED_SPECIAL.test(text) ? text.replace(QUOTED_SPECIAL_ALL, quotedChar) : text;
    return text.includes("\r") ? text.replace(/\r/g, '${"\\r"}') : text;
  }
  let out = "";
  // Their `$` (or `%`) and our `{` would open an expression: one more lead makes both literal.
  if (text[0] === "{" && (last === "$" || last === "%")) out += last;
  if (!quoted && text[0] === "\r" && last === "$") throw unsafe("a carriage return followed a `$` of a Terraform expression");
  for (let i = 0; i < text.length; ) {
    const c = text[i]!;
    if (c === "$" || c === "%") {
      let end = i;
      while (text[end] === c) end++;
      const run = text.slice(i, end);
      // What follows the run: our own text, or (at the end) theirs; our CR is written as `${"\r"}`.
      const after = end < text.length ? (text[end] === "\r" && !quoted ? "$" : text[end]) : next[0];
      if (after === "{") out += run + c;
      // Our leads right before a `$`/`%` would change how that one reads: write ours as a value.
      else if (after === c) out += `\${"${run}"}`;
      else out += run;
      i = end;
      continue;
    }
    // After a bare CR, Terraform reads the rest of a template as plain text (checked with tofu):
    // our CR must not switch off the task's expressions after it, so it is written as a value.
    if (c === "\r" && !quoted) out += '${"\\r"}';
    else out += quoted ? quotedChar(c) : c;
    i++;
  }
  return out;
}

const LEADS = /[$%]/;
const QUOTED_SPECIAL = /["\\\u0000-\u001f\u007f]/;
const QUOTED_SPECIAL_ALL = /["\\\u0000-\u001f\u007f]/g;

/** One character inside an HCL quoted string. */
function quotedChar(c: string): string {
  switch (c) {
    case "\\":
      return "\\\\";
    case '"':
      return '\\"';
    case "\n":
      return "\\n";
    case "\r":
      return "\\r";
    case "\t":
      return "\\t";
  }
  const code = c.charCodeAt(0);
  if (code < 0x20 || code === 0x7f) return `\\u${code.toString(16).padStart(4, "0")}`;
  return c;
}

/** The task's own expressions in a synthesized JSON: `ownExpressionKey(path)` → each as written. */
export type OwnExpressions = Record<string, string[]>;

/** The record key of a JSON path (`key`: the property name at the end of `path` itself, not its value). */
export function ownExpressionKey(path: readonly string[], key = false): string {
  return JSON.stringify(key ? [...path, "#key"] : path);
}

/**
 * The top-level `${…}` and `%{…}` Terraform would evaluate in `text`, each to its closing brace
 * (quoted strings and templates nested in it included): what a lone `$`/`%` before `{` opens
 * (two or more are an escape, as the writer writes them). An unclosed one runs to the end.
 */
export function liveTemplates(text: string): string[] {
  const found: string[] = [];
  const modes: Mode[] = [{ kind: "text", quoted: false }];
  let openedAt = -1;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    const mode = modes[modes.length - 1]!;
    if (mode.kind === "expr") {
      if (c === '"') modes.push({ kind: "text", quoted: true });
      else if (c === "{") mode.depth++;
      else if (c === "}") {
        if (mode.depth === 0) modes.pop();
        else mode.depth--;
        if (modes.length === 1) {
          found.push(text.slice(openedAt, i + 1));
          openedAt = -1;
        }
      }
      continue;
    }
    if (mode.quoted && c === "\\") {
      i++;
      continue;
    }
    if (mode.quoted && c === '"') {
      modes.pop();
      continue;
    }
    if (c === "$" || c === "%") {
      let end = i;
      while (text[end] === c) end++;
      if (text[end] === "{" && end - i === 1) {
        if (modes.length === 1) openedAt = i;
        modes.push({ kind: "expr", depth: 0 });
        i = end;
        continue;
      }
      i = end - 1;
    }
  }
  if (openedAt >= 0) found.push(text.slice(openedAt));
  return found;
}

function unsafe(what: string): CtsError {
  return new CtsError("TASK_SYNTH_INVALID", "usage", `${what}. Pass catalog values to cdktf as plain strings (resource arguments, Fn arguments, map values); build expressions only with cdktf's tokens or expression().`);
}

/**
 * A copy of JSON-like data with `fn` applied to every string, keys included. Plain-loop recursion
 * for speed (synthesized output, a ModuleTask's data on every event) up to a depth cdktf itself
 * never reaches; deeper data (whatever a user or Consul sent) is walked without recursion, so the
 * stack is never the limit.
 */
export function mapStrings<T>(value: T, fn: (s: string) => string): T {
  return mapRecursive(value, fn, 0) as T;
}

const MAX_RECURSION = 400;

function mapRecursive(v: unknown, fn: (s: string) => string, depth: number): unknown {
  if (typeof v === "string") return fn(v);
  if (typeof v !== "object" || v === null) return v;
  if (depth > MAX_RECURSION) return mapIterative(v, fn);
  if (Array.isArray(v)) {
    const out: unknown[] = [];
    for (let i = 0; i < v.length; i++) out.push(mapRecursive(v[i], fn, depth + 1));
    return out;
  }
  const out: Record<string, unknown> = {};
  const src = v as Record<string, unknown>;
  for (const k of Object.keys(src)) setOwn(out, fn(k), mapRecursive(src[k], fn, depth + 1));
  return out;
}

function mapIterative(value: object, fn: (s: string) => string): unknown {
  const root: { v: unknown } = { v: undefined };
  const stack: Array<{ src: unknown; set: (v: unknown) => void }> = [{ src: value, set: (v) => (root.v = v) }];
  while (stack.length > 0) {
    const { src, set } = stack.pop()!;
    if (typeof src === "string") {
      set(fn(src));
      continue;
    }
    if (typeof src !== "object" || src === null) {
      set(src);
      continue;
    }
    if (Array.isArray(src)) {
      const out: unknown[] = [];
      set(out);
      for (let i = 0; i < src.length; i++) {
        out.push(undefined);
        stack.push({ src: src[i], set: (v) => (out[i] = v) });
      }
      continue;
    }
    const out: Record<string, unknown> = {};
    set(out);
    for (const k of Object.keys(src)) {
      const key = fn(k);
      setOwn(out, key, undefined);
      stack.push({ src: (src as Record<string, unknown>)[k], set: (v) => setOwn(out, key, v) });
    }
  }
  return root.v;
}

/** A "__proto__" key from Consul stays data (an assignment would set the copy's prototype). */
function setOwn(out: Record<string, unknown>, key: string, value: unknown): void {
  if (key === "__proto__") Object.defineProperty(out, key, { value, enumerable: true, writable: true, configurable: true });
  else out[key] = value;
}

/** A copy of plain data whose every string (keys too) is literal Terraform template text. */
export function literalData<T>(value: T): T {
  return mapStrings(value, (s) => templateText(s, "", ""));
}
