import { backoffDelay, NO_JITTER } from "../time/backoff.ts";
import { systemClock, type Clock } from "../time/clock.ts";
import { pause } from "../time/pause.ts";
import { messageOf } from "../errors/cts-error.ts";
import type { Logger } from "../log/logger.ts";
import { TXN_MAX_OPS, type HaKv, type TxnOp } from "./kv.ts";

/** Retries of a failed state write: 250 ms doubling to 5 s (one writer per instance: no jitter needed). */
const WRITE_BACKOFF = { baseMs: 250, maxMs: 5_000, jitter: NO_JITTER };

/**
 * Writes the leader's state to KV: the latest value per key wins (writes coalesce), and every
 * write is a transaction that first checks this instance's session still holds the leader lock,
 * so a deposed leader that has not noticed yet cannot overwrite what the new leader stores.
 */
export class StateWriter {
  /** Key → value (null deletes) and the lock key the write is fenced with. */
  private readonly pending = new Map<string, { value: string | null; fence: string }>();
  private session: string | undefined;
  private running: Promise<void> | undefined;
  private readonly idleWaiters: Array<() => void> = [];
  /** Aborted when leadership ends, so a retry wait does not outlive it. */
  private leading = new AbortController();

  constructor(
    private readonly kv: HaKv,
    private readonly lockKey: string,
    private readonly log: Logger,
    /** Retry waits and flush bounds run on it (tests pass a fake clock). */
    private readonly clock: Clock = systemClock,
  ) {}

  /** How many state writes wait to reach Consul. */
  get pendingCount(): number {
    return this.pending.size;
  }

  /** The session writes are fenced with (set while leading; undefined drops what is pending). */
  setSession(session: string | undefined): void {
    this.session = session;
    if (!session) {
      this.leading.abort();
      this.leading = new AbortController();
      if (this.pending.size > 0) this.log.debug(`ha: not leading: ${this.pending.size} state write(s) dropped`);
      this.pending.clear();
      this.wakeIdle();
    } else this.kick();
  }

  /**
   * Queues a write of `value` (null deletes the key), fenced with the leader lock or, in shared
   * mode, with the lock `fence` (the task's owner lock): Consul refuses it once that lock is lost.
   */
  set(key: string, value: string | null, fence = this.lockKey): void {
    if (!this.session) return;
    this.pending.delete(key);
    this.pending.set(key, { value, fence });
    this.kick();
  }

  /** Resolves true once everything queued is written, false after `timeoutMs` or when not leading. */
  async flush(timeoutMs = 5_000): Promise<boolean> {
    if (this.pending.size === 0 && !this.running) return this.session !== undefined;
    let timer: unknown;
    const done = await Promise.race([
      new Promise<boolean>((r) => this.idleWaiters.push(() => r(true))),
      new Promise<boolean>((r) => (timer = this.clock.setTimeout(() => r(false), timeoutMs))),
    ]);
    this.clock.clearTimeout(timer);
    return done && this.session !== undefined;
  }

  private kick(): void {
    if (this.running || this.pending.size === 0 || !this.session) return;
    this.running = this.drain().finally(() => {
      this.running = undefined;
      if (this.pending.size > 0 && this.session) this.kick();
      else this.wakeIdle();
    });
  }

  private wakeIdle(): void {
    if (this.running) return;
    for (const w of this.idleWaiters.splice(0)) w();
  }

  private async drain(): Promise<void> {
    let failures = 0;
    while (this.pending.size > 0 && this.session) {
      const session = this.session;
      // One transaction per lock: a lost task lock refuses only that task's writes.
      const fence = this.pending.values().next().value!.fence;
      const batch = [...this.pending].filter(([, w]) => w.fence === fence).slice(0, TXN_MAX_OPS - 1);
      for (const [k] of batch) this.pending.delete(k);
      const ops: TxnOp[] = [
        { verb: "check-session", key: fence, session },
        ...batch.map(([key, { value }]): TxnOp => (value === null ? { verb: "delete", key } : { verb: "set", key, value })),
      ];
      try {
        if (await this.kv.txn(ops)) {
          failures = 0;
          continue;
        }
        this.log.warn(`ha: this instance no longer holds the lock '${fence}': ${batch.length} state write(s) refused by Consul (the new holder's state stands)`);
        for (const [k, w] of [...this.pending]) if (w.fence === fence) this.pending.delete(k);
        continue;
      } catch (err) {
        // Put back what no newer write replaced, then retry while still leading.
        for (const [k, v] of batch.reverse()) if (!this.pending.has(k)) this.pending.set(k, v);
        const delay = backoffDelay(WRITE_BACKOFF, ++failures);
        this.log.warn(`ha: storing task state in Consul failed, retrying in ${delay} ms: ${messageOf(err)}`);
        await pause(delay, this.leading.signal, this.clock);
      }
    }
  }
}
