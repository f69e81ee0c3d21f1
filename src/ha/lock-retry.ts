import type { Logger } from "../log.ts";
import type { Controller } from "../runtime/controller.ts";
import type { TaskEvent } from "../runtime/events.ts";

/**
 * After a failover the old leader's Terraform may still hold a task's state lock: an orphaned
 * apply finishing, or the lock session of a cut-off apply (Terraform's consul backend uses a 15 s
 * TTL and a 5 s lock delay, so up to ~35 s). A run that failed on the lock is retried this often…
 */
export const LOCK_RETRY_MS = 5_000;
/** …this many times (60 s in all). */
export const LOCK_RETRY_MAX = 12;
/** How tofu and terraform say the state is locked. */
export const STATE_LOCKED = /Error acquiring the state lock|failed to lock state|state lock/i;

/** Re-runs tasks whose run failed on the Terraform state lock, while this instance leads. */
export class StateLockRetry {
  private readonly attempts = new Map<string, number>();
  private readonly timers = new Set<ReturnType<typeof setTimeout>>();

  constructor(
    private readonly controller: Controller,
    private readonly log: Logger,
    private readonly leading: () => boolean,
    private readonly delayMs = LOCK_RETRY_MS,
    private readonly max = LOCK_RETRY_MAX,
  ) {}

  /** Looks at every event the leader records. */
  onEvent(event: TaskEvent): void {
    if (event.success) this.attempts.delete(event.task_name);
    else if (STATE_LOCKED.test(event.error?.message ?? "")) this.retry(event.task_name);
  }

  /** Forgets every pending retry (the instance stopped leading). */
  clear(): void {
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    this.attempts.clear();
  }

  private retry(task: string): void {
    const n = (this.attempts.get(task) ?? 0) + 1;
    if (n > this.max) {
      this.log.error(
        `ha: task '${task}': its Terraform state stayed locked for ${(this.max * this.delayMs) / 1000} s; giving up until its data changes. Check for a Terraform process still running on another instance, or release the lock with \`tofu force-unlock\`.`,
      );
      return;
    }
    this.attempts.set(task, n);
    this.log.warn(`ha: task '${task}': its Terraform state is locked (most likely the previous leader's apply is still finishing or its lock has not expired); running it again in ${this.delayMs / 1000} s`, { attempt: n });
    const t = setTimeout(() => {
      this.timers.delete(t);
      if (this.leading() && this.controller.view(task)?.enabled) void this.controller.runNow(task).catch(() => undefined);
    }, this.delayMs);
    t.unref();
    this.timers.add(t);
  }
}
