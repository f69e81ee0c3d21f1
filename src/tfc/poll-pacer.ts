import { systemClock, type Clock } from "../time/clock.ts";
import { pause } from "../time/pause.ts";

/** Polls per second a client's followers make in all, by default: two thirds of TFC's 30 requests/s per token. */
export const DEFAULT_POLLS_PER_SECOND = 20;

/**
 * Spaces the run polls of every run a client follows, so that many runs followed at once (each
 * polling soon after a status change) stay under Terraform Cloud's rate limit of 30 requests/s
 * per token and leave room for the other calls. One poll alone never waits.
 */
export class PollPacer {
  private nextAt = Number.NEGATIVE_INFINITY;
  private readonly gapMs: number;

  constructor(
    perSecond = DEFAULT_POLLS_PER_SECOND,
    private readonly clock: Clock = systemClock,
  ) {
    this.gapMs = 1000 / Math.max(0.001, perSecond);
  }

  /** Waits for this poll's turn; false when `signal` ended the wait. */
  turn(signal?: AbortSignal): Promise<boolean> {
    const now = this.clock.now();
    const at = Math.max(now, this.nextAt);
    this.nextAt = at + this.gapMs;
    return at <= now ? Promise.resolve(!signal?.aborted) : pause(at - now, signal, this.clock);
  }
}
