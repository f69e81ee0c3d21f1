/**
 * Runs tasks with at most one run per task at a time and at most `concurrency` runs overall.
 * A task marked while it runs gets exactly one more run afterwards (its run reads the latest data
 * when it starts), however many marks arrived.
 */
export class WorkQueue {
  private readonly running = new Set<string>();
  private readonly pending = new Set<string>();
  private readonly waiting: string[] = [];
  private readonly idleWaiters: Array<() => void> = [];
  private readonly settleWaiters = new Map<string, Array<() => void>>();
  private closed = false;

  constructor(
    private readonly run: (task: string) => Promise<void>,
    private concurrency = 4,
  ) {}

  /** Asks for a run of `task`: starts now, queues, or collapses into the queued run. */
  enqueue(task: string): void {
    if (this.closed) return;
    if (this.running.has(task)) {
      this.pending.add(task);
      return;
    }
    if (this.waiting.includes(task)) return;
    this.waiting.push(task);
    this.pump();
  }

  /** Changes the concurrency limit. */
  setConcurrency(n: number): void {
    this.concurrency = Math.max(1, n);
    this.pump();
  }

  /** Whether a task is running now. */
  isRunning(task: string): boolean {
    return this.running.has(task);
  }

  /** Whether a task has a run queued or running. */
  isBusy(task: string): boolean {
    return this.running.has(task) || this.pending.has(task) || this.waiting.includes(task);
  }

  /** Runs waiting for a slot (queued, or marked to run again) and runs in progress. */
  depth(): { waiting: number; running: number } {
    return { waiting: this.waiting.length + this.pending.size, running: this.running.size };
  }

  /** Drops queued (not running) runs of a task. */
  forget(task: string): void {
    this.pending.delete(task);
    const i = this.waiting.indexOf(task);
    if (i >= 0) this.waiting.splice(i, 1);
    this.notify(task);
  }

  /** Resolves when nothing runs and nothing waits. */
  idle(): Promise<void> {
    if (this.running.size === 0 && this.waiting.length === 0) return Promise.resolve();
    return new Promise((r) => this.idleWaiters.push(r));
  }

  /** Resolves when `task` has no run queued or running. */
  settled(task: string): Promise<void> {
    if (!this.isBusy(task)) return Promise.resolve();
    return new Promise((r) => this.settleWaiters.set(task, [...(this.settleWaiters.get(task) ?? []), r]));
  }

  /** Stops taking work (running runs finish). */
  close(): void {
    this.closed = true;
    const dropped = [...this.waiting, ...this.pending];
    this.waiting.length = 0;
    this.pending.clear();
    for (const t of dropped) this.notify(t);
  }

  private notify(task: string): void {
    if (this.isBusy(task)) return;
    const waiters = this.settleWaiters.get(task);
    this.settleWaiters.delete(task);
    for (const w of waiters ?? []) w();
  }

  private pump(): void {
    while (this.running.size < this.concurrency) {
      const idx = this.waiting.findIndex((t) => !this.running.has(t));
      if (idx < 0) break;
      const task = this.waiting.splice(idx, 1)[0]!;
      this.running.add(task);
      void this.run(task)
        .catch(() => undefined)
        .finally(() => {
          this.running.delete(task);
          if (this.pending.delete(task) && !this.closed) this.waiting.push(task);
          this.pump();
          this.notify(task);
          if (this.running.size === 0 && this.waiting.length === 0) for (const w of this.idleWaiters.splice(0)) w();
        });
    }
  }
}
