import { dataTooDeep, MAX_WALK_DEPTH } from "../data-depth.ts";

/** What a known secret value is replaced with, wherever it would have been shown. */
export const REDACTED = "[redacted]";

/**
 * Shorter values are not treated as secrets: replacing every "on" or "1" would shred Terraform's
 * output and error texts, and a secret that short protects nothing anyway.
 */
export const MIN_SECRET_LENGTH = 4;

/**
 * The values that must never leave the process: task secrets, Consul tokens (also rotated ones
 * from a token file), the API token. Texts from Terraform, providers and errors go through
 * `redact` before they become a log line, an event, an API answer, a KV record or CLI output.
 */
export class Redactor {
  private readonly values = new Set<string>();
  /** Longest first, so a secret that contains another secret is replaced whole. */
  private sorted: string[] = [];

  /** Registers a secret value (ignored when shorter than MIN_SECRET_LENGTH). */
  add(value: string | undefined): void {
    if (!value || value.length < MIN_SECRET_LENGTH) return;
    // A value with quotes, backslashes or control characters appears escaped inside JSON texts
    // (Terraform's -json diagnostics, stored events): the escaped spelling is a secret too.
    const forms = [value, JSON.stringify(value).slice(1, -1), value.trim()];
    let changed = false;
    for (const f of forms) {
      if (f.length < MIN_SECRET_LENGTH || this.values.has(f)) continue;
      this.values.add(f);
      changed = true;
    }
    if (changed) this.sorted = [...this.values].sort((a, b) => b.length - a.length);
  }

  /** How many values are registered (tests, diagnostics; never the values). */
  get size(): number {
    return this.values.size;
  }

  /** `text` with every registered value replaced by REDACTED. */
  redact(text: string): string {
    let out = text;
    for (const s of this.sorted) if (out.includes(s)) out = out.split(s).join(REDACTED);
    return out;
  }

  /** A copy of a JSON-like value with every string (keys too) redacted; other values kept. */
  redactDeep<T>(value: T): T {
    if (this.sorted.length === 0) return value;
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
 * secret (task secrets, Consul token and token-file rotation, API token) fill it; the logger,
 * the Terraform driver, the event store, the API and the CLI read it.
 */
export const knownSecrets = new Redactor();
