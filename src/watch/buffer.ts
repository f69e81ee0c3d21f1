import { Duration } from "../time/duration.ts";
import { CtsError } from "../errors/cts-error.ts";
import { systemClock, type Clock } from "../time/clock.ts";

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
  const min = cfg.min !== undefined ? Duration.parse(cfg.min, `${field}.min`).ms : parent.min;
  const max = cfg.max !== undefined ? Duration.parse(cfg.max, `${field}.max`).ms : cfg.min !== undefined ? 4 * min : parent.max;
  if (!enabled) return { enabled: false, min, max };
  if (min > max) {
    throw new CtsError(
      "BUFFER_PERIOD_INVALID",
      "usage",
      `${field}.min must be ≤ ${field}.max, but ${field}.min is ${Duration.ofMs(min)} and ${field}.max is ${Duration.ofMs(max)}. Make min at most max, or set only min (max becomes 4×min).`,
      { detail: { field: `${field}.min` } },
    );
  }
  return { enabled, min, max };
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
      throw new CtsError("BUFFER_PERIOD_INVALID", "usage", `bufferPeriod.min must be ≤ bufferPeriod.max, but bufferPeriod.min is ${Duration.ofMs(period.min)} and bufferPeriod.max is ${Duration.ofMs(period.max)}. Make min at most max.`, {
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
