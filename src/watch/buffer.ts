import { CtsError } from "../errors.ts";

/** Time, behind an interface so buffer tests run on a fake clock instead of sleeping. */
export interface Clock {
  now(): number;
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

/** The real clock. */
export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
};

/** A resolved buffer period, in ms. */
export interface BufferPeriodSettings {
  enabled: boolean;
  min: number;
  max: number;
}

/** A buffer period as a user writes it: ms or a Go-style duration ("5s", "500ms", "1m30s"). */
export interface BufferPeriodConfig {
  enabled?: boolean;
  min?: number | string;
  max?: number | string;
}

/** CTS's global default: enabled, 5 s quiet, at most 20 s. */
export const DEFAULT_BUFFER_PERIOD: BufferPeriodSettings = { enabled: true, min: 5_000, max: 20_000 };

/**
 * Resolves a buffer period with CTS's rules: unset fields come from `parent` (the global setting,
 * or CTS's default); only min given → max = 4×min; min > max fails naming the field.
 */
export function normalizeBufferPeriod(
  cfg: BufferPeriodConfig | undefined,
  field = "bufferPeriod",
  parent: BufferPeriodSettings = DEFAULT_BUFFER_PERIOD,
): BufferPeriodSettings {
  if (!cfg) return { ...parent };
  const enabled = cfg.enabled ?? (cfg.min !== undefined || cfg.max !== undefined ? true : parent.enabled);
  const min = cfg.min !== undefined ? parseDuration(cfg.min, `${field}.min`) : parent.min;
  const max = cfg.max !== undefined ? parseDuration(cfg.max, `${field}.max`) : cfg.min !== undefined ? 4 * min : parent.max;
  if (!enabled) return { enabled: false, min, max };
  if (min > max) {
    throw new CtsError(
      "BUFFER_PERIOD_INVALID",
      "usage",
      `${field}.min (${formatMs(min)}) is greater than ${field}.max (${formatMs(max)}). Make min at most max, or set only min (max becomes 4×min).`,
      { detail: { field: `${field}.min` } },
    );
  }
  return { enabled, min, max };
}

/** Parses ms or a Go duration string ("1m30s", "250ms"); rejects negatives, naming the field. */
export function parseDuration(value: number | string, field: string): number {
  const bad = (why: string) =>
    new CtsError("DURATION_INVALID", "usage", `${field} '${value}' ${why}. Use milliseconds or a duration like "5s", "500ms" or "1m30s".`, {
      detail: { field },
    });
  if (typeof value === "number") {
    if (!Number.isFinite(value) || value < 0) throw bad("is not a non-negative number");
    return value;
  }
  const units: Record<string, number> = { ns: 1e-6, us: 1e-3, µs: 1e-3, ms: 1, s: 1_000, m: 60_000, h: 3_600_000 };
  const text = value.trim();
  if (text === "0") return 0;
  const re = /(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)/gy;
  let total = 0;
  let consumed = 0;
  for (let m = re.exec(text); m; m = re.exec(text)) {
    total += Number(m[1]) * units[m[2]!]!;
    consumed = re.lastIndex;
  }
  if (text === "" || consumed !== text.length) throw bad("is not a duration");
  return total;
}

function formatMs(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000}s` : `${ms}ms`;
}

/**
 * A quiescence timer: the first trigger starts a `min` timer and fixes a deadline now+max; each
 * further trigger restarts `min` but never past the deadline. Fires the callback once per period;
 * the next trigger after that starts a new period.
 */
export class BufferPeriod {
  private readonly min: number;
  private readonly max: number;
  private readonly onFire: () => void;
  private readonly clock: Clock;
  private timer: unknown;
  private deadline: number | undefined;

  constructor(period: { min: number; max: number }, onFire: () => void, clock: Clock = systemClock) {
    if (period.min > period.max) {
      throw new CtsError("BUFFER_PERIOD_INVALID", "usage", `bufferPeriod.min (${period.min} ms) is greater than bufferPeriod.max (${period.max} ms). Make min at most max.`, {
        detail: { field: "bufferPeriod.min" },
      });
    }
    this.min = period.min;
    this.max = period.max;
    this.onFire = onFire;
    this.clock = clock;
  }

  /** True while a period is running (triggered, not yet fired or cancelled). */
  get pending(): boolean {
    return this.deadline !== undefined;
  }

  /** Records a change: starts or extends the quiet period. */
  trigger(): void {
    const now = this.clock.now();
    if (this.deadline === undefined) this.deadline = now + this.max;
    this.clearTimer();
    const delay = Math.max(0, Math.min(this.min, this.deadline - now));
    this.timer = this.clock.setTimeout(() => this.fire(), delay);
  }

  /** Drops a running period without firing. */
  cancel(): void {
    this.clearTimer();
    this.deadline = undefined;
  }

  private fire(): void {
    this.timer = undefined;
    this.deadline = undefined;
    this.onFire();
  }

  private clearTimer(): void {
    if (this.timer !== undefined) this.clock.clearTimeout(this.timer);
    this.timer = undefined;
  }
}
