import type { Source } from "../consul/types.ts";
import type { AnyTaskInput } from "../task/task.ts";
import type { Subscription } from "../watch/types.ts";

/** One live subscription of a watched task, by the input field it fills. */
export interface WatchedSource {
  field: keyof AnyTaskInput;
  source: Source;
  sub: Subscription;
}

/**
 * The live subscriptions of the tasks being watched: written by the triggers (which open and close
 * them), read by the task input (a watched task's run takes the data they hold instead of reading
 * Consul again).
 */
export class WatchedData {
  private readonly byTask = new Map<string, WatchedSource[]>();

  /** The task's subscriptions (empty when it is not watched). */
  of(task: string): readonly WatchedSource[] {
    return this.byTask.get(task) ?? [];
  }

  /** Sets the task's subscriptions (empty: not watched). */
  set(task: string, subs: WatchedSource[]): void {
    if (subs.length) this.byTask.set(task, subs);
    else this.byTask.delete(task);
  }
}
