import { systemClock, unrefTimer, type Clock } from "../time/clock.ts";
import { messageOf } from "../errors/cts-error.ts";
import type { Logger } from "../log/logger.ts";
import type { HaKv } from "./kv.ts";
import { durationText, type HaSettings } from "./settings.ts";

/** The name of an instance's sessions: the identity check at start finds another live instance's by it. */
export function sessionName(settings: Pick<HaSettings, "clusterName" | "id">): string {
  return `cts-ha:${settings.clusterName}:${settings.id}`;
}

/** Why a session stopped being usable. */
export type SessionLoss = { kind: "invalidated"; message: string } | { kind: "fenced"; message: string };

/**
 * One Consul session: renewed every TTL/2 (retried quickly after a failure). It reports itself
 * lost when Consul says it is gone, or when no renewal succeeded for `fenceAfterMs` counted from
 * when the last successful renewal was SENT — Consul cannot have expired it before TTL×2 after it
 * received that renewal, so a leader that stops at this point stops before anyone else can lead.
 */
export class LeaderSession {
  private renewTimer: unknown;
  private fenceTimer: unknown;
  private lastOkSentAt = 0;
  private ended = false;
  private failures = 0;

  private constructor(
    readonly id: string,
    private readonly kv: HaKv,
    private readonly settings: HaSettings,
    private readonly log: Logger,
    private readonly onLost: (loss: SessionLoss) => void,
    createdSentAt: number,
    private readonly clock: Clock,
  ) {
    this.lastOkSentAt = createdSentAt;
    this.armFence();
    this.schedule(settings.renewIntervalMs);
  }

  /** Creates a session in Consul and starts renewing it (on `clock`: a fake one in tests). */
  static async create(kv: HaKv, settings: HaSettings, log: Logger, onLost: (loss: SessionLoss) => void, clock: Clock = systemClock): Promise<LeaderSession> {
    const sentAt = clock.now();
    const id = await kv.createSession(sessionName(settings), settings.sessionTtlMs, settings.lockDelayMs);
    log.debug(`ha: created session`, { session: id, ttl: durationText(settings.sessionTtlMs) });
    return new LeaderSession(id, kv, settings, log, onLost, sentAt, clock);
  }

  /** Milliseconds since the last successful renewal was sent. */
  sinceRenewal(): number {
    return this.clock.now() - this.lastOkSentAt;
  }

  /**
   * Milliseconds until Consul may give this session's locks to another instance: its session timer
   * runs TTL × 2 from the last renewal it received (sent no earlier than `lastOkSentAt`), and the
   * lock delay starts when it invalidates the session. Negative: that time is past (this process
   * was paused, or starved, for longer than Consul keeps a session).
   */
  lockMayGoInMs(): number {
    return this.settings.sessionTtlMs * 2 + this.settings.lockDelayMs - this.sinceRenewal();
  }

  /** Whether the session is still believed valid. */
  get alive(): boolean {
    return !this.ended;
  }

  private schedule(delay: number): void {
    if (this.ended) return;
    this.renewTimer = this.clock.setTimeout(() => void this.renew(), delay);
  }

  private armFence(): void {
    if (this.fenceTimer !== undefined) this.clock.clearTimeout(this.fenceTimer);
    const left = this.settings.fenceAfterMs - this.sinceRenewal();
    this.fenceTimer = this.clock.setTimeout(() => {
      if (this.ended) return;
      // Timers may fire a little early against the monotonic clock: re-arm rather than give up.
      if (this.sinceRenewal() < this.settings.fenceAfterMs) return this.armFence();
      this.fence();
    }, Math.max(1, Math.ceil(left)));
  }

  private fence(): void {
    this.lose({
      kind: "fenced",
      message: `no session renewal succeeded for ${durationText(Math.round(this.sinceRenewal()))} (session TTL ${durationText(this.settings.sessionTtlMs)}); Consul may give the lock away soon`,
    });
  }

  private async renew(): Promise<void> {
    if (this.ended) return;
    const sentAt = this.clock.now();
    try {
      const answer = await this.kv.renewSession(this.id, Math.max(200, Math.min(this.settings.renewIntervalMs, this.settings.fenceAfterMs - this.sinceRenewal())));
      if (this.ended) return;
      if (answer === "gone") {
        this.lose({ kind: "invalidated", message: "Consul invalidated this instance's session" });
        return;
      }
      if (this.failures > 0) this.log.info(`ha: session renewal works again after ${this.failures} failed attempt(s)`);
      this.failures = 0;
      this.lastOkSentAt = sentAt;
      this.armFence();
      this.schedule(this.settings.renewIntervalMs);
    } catch (err) {
      if (this.ended) return;
      this.failures++;
      if (this.sinceRenewal() >= this.settings.fenceAfterMs) return this.fence();
      if (this.failures === 1 || this.failures % 10 === 0)
        this.log.warn(`ha: renewing the session failed (attempt ${this.failures}): ${messageOf(err)}`, { since_renewal_ms: Math.round(this.sinceRenewal()) });
      this.schedule(this.settings.renewRetryMs);
    }
  }

  private lose(loss: SessionLoss): void {
    if (this.ended) return;
    this.stopTimers();
    this.onLost(loss);
  }

  private stopTimers(): void {
    this.ended = true;
    if (this.renewTimer !== undefined) this.clock.clearTimeout(this.renewTimer);
    if (this.fenceTimer !== undefined) this.clock.clearTimeout(this.fenceTimer);
  }

  /** Stops renewing and destroys the session in Consul (its locks are released). Never throws. */
  async destroy(timeoutMs = 3_000): Promise<boolean> {
    this.stopTimers();
    try {
      await this.kv.destroySession(this.id, timeoutMs);
      return true;
    } catch (err) {
      this.log.debug(`ha: destroying session failed: ${messageOf(err)}`, { session: this.id });
      return false;
    }
  }

  /**
   * Stops renewing and keeps trying to destroy the session in the background until Consul
   * answers or the session must have expired anyway: a fenced leader that reaches Consul again
   * frees the lock at once instead of making everyone wait for the TTL. `retry` false: only stops
   * renewing (a process stopping while Consul is unreachable).
   */
  abandon(retry = true): void {
    this.stopTimers();
    // Stopping with Consul unreachable: no attempt at all (the session expires after its TTL).
    if (!retry) return;
    const giveUpAt = this.clock.now() + this.settings.sessionTtlMs * 2 + 1_000;
    const attempt = async () => {
      if (await this.destroy(this.settings.renewRetryMs * 2)) return;
      if (this.clock.now() < giveUpAt) unrefTimer(this.clock.setTimeout(() => void attempt(), this.settings.renewRetryMs));
    };
    void attempt();
  }
}
