import { dataTooDeep, MAX_WALK_DEPTH } from "../values/data-depth.ts";
import { base64Forms, secretPattern } from "./forms.ts";

/** What a known secret value is replaced with, wherever it would have been shown. */
export const REDACTED = "[redacted]";

/**
 * Shorter values are not treated as secrets: replacing every "on" or "1" would shred Terraform's
 * output and error texts, and a secret that short protects nothing anyway.
 */
export const MIN_SECRET_LENGTH = 4;

/** Base64 parts shorter than this are not matched: they would hit ordinary words. */
const MIN_BASE64_LENGTH = 8;

const BACKSLASH = 0x5c;

/** Adds where `re` matches in `text` (start, end pairs) to `ranges`, made on the first match. */
function matches(re: RegExp, text: string, ranges: number[] | undefined): number[] | undefined {
  re.lastIndex = 0;
  for (let m = re.exec(text); m; m = re.exec(text)) {
    (ranges ??= []).push(m.index, m.index + m[0].length);
    // From the next character, not the match's end: a secret may overlap itself.
    re.lastIndex = m.index + 1;
  }
  return ranges;
}

/** `text` with each span of `ranges` (start, end pairs, in any order, overlapping) replaced by one REDACTED. */
function replaceRanges(text: string, ranges: number[]): string {
  const spans: Array<[number, number]> = [];
  for (let i = 0; i < ranges.length; i += 2) spans.push([ranges[i]!, ranges[i + 1]!]);
  spans.sort((a, b) => a[0] - b[0]);
  let out = "";
  let last = 0;
  for (let i = 0; i < spans.length; ) {
    let [start, end] = spans[i]!;
    for (i++; i < spans.length && spans[i]![0] <= end; i++) end = Math.max(end, spans[i]![1]);
    // A match right after an escaping backslash takes the backslash along, so JSON stays valid.
    let k = start;
    while (k > last && text.charCodeAt(k - 1) === BACKSLASH) k--;
    if ((start - k) % 2 === 1) start--;
    out += text.slice(last, start) + REDACTED;
    last = end;
  }
  return out + text.slice(last);
}

const KNOWN_SECRETS = Symbol.for("cdktf-sync.knownSecrets");

/**
 * The values that must never leave the process: task secrets, Consul tokens (also rotated ones
 * from a token file), the API token, `{{ env }}` values of CTS provider blocks. Texts from
 * Terraform, providers and errors go through `redact` before they become a log line, an event, an
 * API answer, a KV record or CLI output. A value is matched in every form it is printed in (see
 * `forms.ts`); the expressions are compiled once per new secret, never per line.
 */
export class Redactor {
  /** The values as registered, in order (what another thread is sent). */
  private readonly raw: string[] = [];
  /** Every text matched: the values, trimmed, with whitespace collapsed, and each line of a multi-line value. */
  private readonly texts = new Set<string>();
  private readonly base64 = new Set<string>();
  /**
   * One expression per text, and one for all base64 parts, compiled when a secret is added, never
   * per line. Not one alternation of everything: V8 optimises small patterns only, and over a
   * 200-character line one alternation of 150 secrets cost 100 times what separate expressions
   * did; 3 secrets take under 1 µs a line.
   */
  private readonly patterns: RegExp[] = [];
  private base64Pattern: RegExp | undefined;

  /** Registers a secret value (ignored when shorter than MIN_SECRET_LENGTH). */
  add(value: string | undefined): void {
    if (!value || value.length < MIN_SECRET_LENGTH || this.raw.includes(value)) return;
    this.raw.push(value);
    // Terraform and providers print text line by line (a plan shows a multi-line value as a
    // heredoc, indented): each line of a secret is a secret too, as GitHub Actions masks them.
    // An error summary collapses whitespace (an event's message): that spelling is one too.
    const lines = value.split(/\r?\n/).map((l) => l.trim());
    const collapsed = value.replace(/\s+/g, " ").trim();
    for (const t of [value, value.trim(), collapsed, ...(lines.length > 1 ? lines : [])]) {
      if (t.length < MIN_SECRET_LENGTH || this.texts.has(t)) continue;
      this.texts.add(t);
      this.patterns.push(new RegExp(secretPattern(t), "g"));
    }
    const b64 = base64Forms(value, MIN_BASE64_LENGTH);
    if (b64.length) {
      for (const b of b64) this.base64.add(b);
      this.base64Pattern = new RegExp([...this.base64].map((b) => b.replace(/[+/]/g, "\\$&")).join("|"), "g");
    }
  }

  /** The registered values, in the order they were added: what a worker thread hands to the main thread and back. */
  values(): readonly string[] {
    return this.raw;
  }

  /** How many values are registered (tests, diagnostics; never the values). */
  get size(): number {
    return this.raw.length;
  }

  /** `text` with every registered value, in any of its forms, replaced by REDACTED. */
  redact(text: string): string {
    if (this.raw.length === 0) return text;
    let ranges: number[] | undefined;
    for (const re of this.patterns) ranges = matches(re, text, ranges);
    if (this.base64Pattern) ranges = matches(this.base64Pattern, text, ranges);
    return ranges ? replaceRanges(text, ranges) : text;
  }

  /** A copy of a JSON-like value with every string (keys too) redacted; other values kept. */
  redactDeep<T>(value: T): T {
    if (this.raw.length === 0) return value;
    return this.walk(value) as T;
  }

  private walk(v: unknown, depth = 0): unknown {
    if (typeof v === "string") return this.redact(v);
    // Bounded: a stack overflow would lose the answer or event this redacts; DATA_TOO_DEEP says why.
    if (typeof v === "object" && v !== null && depth >= MAX_WALK_DEPTH) throw dataTooDeep("a value to redact");
    if (Array.isArray(v)) return v.map((x) => this.walk(x, depth + 1));
    if (v && typeof v === "object" && Object.getPrototypeOf(v) === Object.prototype) {
      const out: Record<string, unknown> = {};
      for (const [k, x] of Object.entries(v)) out[this.redact(k)] = this.walk(x, depth + 1);
      return out;
    }
    return v;
  }
}

/**
 * The process's registry of known secrets. The composition root and the places that resolve a
 * secret (task secrets, Consul token and token-file rotation, API token, `{{ env }}` in CTS
 * provider blocks) fill it; the logger, the Terraform driver, the event store, the API and the
 * CLI read it. A worker thread keeps its own and exchanges values with the main thread (see
 * `src/synth/synthesizer.ts`). It lives on `globalThis`: a TypeScript config is loaded with its own
 * copy of cts's modules (a tsx namespace), and a secret registered through that copy must reach the
 * same registry.
 */
export const knownSecrets: Redactor = ((globalThis as { [KNOWN_SECRETS]?: Redactor })[KNOWN_SECRETS] ??= new Redactor());
