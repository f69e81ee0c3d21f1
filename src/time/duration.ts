import { CtsError } from "../errors/cts-error.ts";

// Go's time.ParseDuration units, in ms.
const UNIT_MS: Record<string, number> = { ns: 1e-6, us: 1e-3, µs: 1e-3, μs: 1e-3, ms: 1, s: 1_000, m: 60_000, h: 3_600_000 };
const PART = /(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)/gy;

/**
 * A length of time as CTS writes it: Go duration text ("1m30s", "500ms", "2h", "1.5s") or a
 * number of milliseconds (how cts's TypeScript config and the API take numbers). A bare numeric
 * string other than "0" is refused, as Go refuses it: "5" would be ambiguous between ms and s.
 */
export class Duration {
  private constructor(
    /** The length in milliseconds (may be fractional for ns/µs inputs). */
    readonly ms: number,
  ) {}

  /** Zero. */
  static readonly ZERO = new Duration(0);

  /** A duration of `ms` milliseconds; refuses negative and non-finite numbers. */
  static ofMs(ms: number): Duration {
    if (!Number.isFinite(ms) || ms < 0) throw new RangeError(`a duration must be a non-negative number of ms, not ${ms}`);
    return new Duration(ms);
  }

  /** Parses text or ms, or undefined when `value` is not a duration. */
  static tryParse(value: unknown): Duration | undefined {
    if (value instanceof Duration) return value;
    if (typeof value === "number") return Number.isFinite(value) && value >= 0 ? new Duration(value) : undefined;
    if (typeof value !== "string") return undefined;
    const text = value.trim();
    if (text === "0") return Duration.ZERO;
    PART.lastIndex = 0;
    let total = 0;
    let consumed = 0;
    for (let m = PART.exec(text); m; m = PART.exec(text)) {
      total += Number(m[1]) * UNIT_MS[m[2]!]!;
      consumed = PART.lastIndex;
    }
    return consumed > 0 && consumed === text.length ? new Duration(total) : undefined;
  }

  /** Parses text or ms; a CtsError naming `field` when it is not a duration. */
  static parse(value: unknown, field: string): Duration {
    const d = Duration.tryParse(value);
    if (d) return d;
    const shown = typeof value === "string" ? value.slice(0, 40) : String(value);
    const why = typeof value === "number" ? "is not a non-negative number" : "is not a duration";
    throw new CtsError("DURATION_INVALID", "usage", `${field} '${shown}' ${why}. Use milliseconds or a duration like "5s", "500ms" or "1m30s".`, {
      detail: { field },
    });
  }

  /** -1, 0 or 1 as this is shorter than, equal to or longer than `other`. */
  compare(other: Duration): -1 | 0 | 1 {
    return this.ms < other.ms ? -1 : this.ms > other.ms ? 1 : 0;
  }

  /** Whether both are the same length. */
  equals(other: Duration): boolean {
    return this.ms === other.ms;
  }

  /** This times `factor` (e.g. CTS's max = 4×min). */
  times(factor: number): Duration {
    return Duration.ofMs(this.ms * factor);
  }

  /** This rounded to a multiple of `unit` (e.g. whole seconds for a log line). */
  round(unit: Duration): Duration {
    return unit.ms > 0 ? new Duration(Math.round(this.ms / unit.ms) * unit.ms) : this;
  }

  /**
   * Go-like text without zero parts: "0s", "800ms", "1.5s", "1m30s", "30m", "2h".
   * Whole-second lengths read exactly as CTS prints them; sub-ms precision is dropped.
   */
  toString(): string {
    const ms = Math.round(this.ms);
    if (ms === 0) return "0s";
    if (ms < 1000) return `${ms}ms`;
    const h = Math.floor(ms / 3_600_000);
    const m = Math.floor((ms % 3_600_000) / 60_000);
    const s = (ms % 60_000) / 1000;
    return `${h ? `${h}h` : ""}${m ? `${m}m` : ""}${s ? `${s}s` : ""}`;
  }

  /** The exact text Consul's API takes for a TTL or delay ("15s", "0s", "1500ms"). */
  toConsul(): string {
    const ms = Math.round(this.ms);
    return ms % 1000 === 0 ? `${ms / 1000}s` : `${ms}ms`;
  }

  /** JSON is the text form. */
  toJSON(): string {
    return this.toString();
  }
}

/** Parses "5s", "1m30s", "250ms", "2h" or a number of ms; undefined when the text is not a duration. */
export function parseDuration(value: string | number): number | undefined {
  return Duration.tryParse(value)?.ms;
}

/** Formats ms as duration text ("5s", "1m30s", "1.5s", "800ms"), as CTS prints them. */
export function formatDuration(ms: number): string {
  return Duration.ofMs(Math.max(0, ms)).toString();
}
