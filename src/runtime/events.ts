import { randomUUID } from "node:crypto";
import { knownSecrets } from "../secrets/redactor.ts";
import { EventEmitter } from "node:events";
import { userCodeFields } from "../errors/user-frames.ts";

export type { TaskEvent } from "../state/records.ts";
import type { TaskEvent } from "../state/records.ts";

/** A run or drift check starting or ending (live views: the dashboard's server-sent events). */
export interface RunActivity {
  type: "start" | "end";
  task: string;
  kind: "run" | "drift";
  /** At the end: the outcome word (applied, no-op, failed, drift, in-sync…). */
  outcome?: string;
  ok?: boolean;
}

/** A failure as an event's error: the message, and where in the user's code it was thrown (detail.at, detail.userStack). */
export function eventError(err: { message: string; detail?: Record<string, unknown> }): NonNullable<TaskEvent["error"]> {
  return { message: err.message, ...userCodeFields(err) };
}

/** CTS's task status words. */
export type TaskStatus = "successful" | "errored" | "critical" | "unknown";

/** Default number of events kept per task (CTS keeps 5). */
export const EVENTS_KEPT = 5;

/** The newest events of every task, newest first. */
export class EventStore {
  private readonly byTask = new Map<string, TaskEvent[]>();
  private readonly listeners = new Set<(event: TaskEvent, before: readonly TaskEvent[]) => void>();
  constructor(
    private readonly keep = EVENTS_KEPT,
    /** Scrubs secrets from an event (defence in depth: the driver already redacts its texts). */
    private readonly scrub: (e: TaskEvent) => TaskEvent = (e) => knownSecrets.redactDeep(e),
  ) {}

  /** Records an event (secrets scrubbed), dropping the oldest past the limit. */
  add(raw: TaskEvent): void {
    const event = this.scrub(raw);
    const list = this.byTask.get(event.task_name) ?? [];
    const before = [...list];
    list.unshift(event);
    if (list.length > this.keep) list.length = this.keep;
    this.byTask.set(event.task_name, list);
    // A listener (notifications) only queues work: it never delays or fails the run that recorded this.
    for (const listener of this.listeners) {
      try {
        listener(event, before);
      } catch {
        /* a listener's defect is its own */
      }
    }
  }

  /** Calls `listener` with each recorded event (scrubbed) and the task's events before it, newest first; returns the unsubscribe function. */
  onAdd(listener: (event: TaskEvent, before: readonly TaskEvent[]) => void): () => void {
    this.listeners.add(listener);
    return () => void this.listeners.delete(listener);
  }

  /** Events of a task, newest first. */
  list(task: string): TaskEvent[] {
    return [...(this.byTask.get(task) ?? [])];
  }

  /** Replaces a task's events (restoring stored state). */
  restore(task: string, events: TaskEvent[]): void {
    this.byTask.set(task, events.slice(0, this.keep).map(this.scrub));
  }

  /** Tasks with stored events. */
  names(): string[] {
    return [...this.byTask.keys()];
  }

  /** Forgets a task. */
  delete(task: string): void {
    this.byTask.delete(task);
  }

  /** Status as CTS derives it: newest succeeded → successful; newest failed and it is the only stored failure → errored; more failures → critical; no events → unknown. */
  status(task: string): TaskStatus {
    const list = this.byTask.get(task) ?? [];
    if (list.length === 0) return "unknown";
    if (list[0]!.success) return "successful";
    const failures = list.filter((e) => !e.success).length;
    return failures > 1 ? "critical" : "errored";
  }
}

/** Builds an event for a run that started at `start`. */
export function makeEvent(task: string, start: Date, fields: Partial<TaskEvent> & { success: boolean }): TaskEvent {
  return {
    id: randomUUID(),
    start_time: start.toISOString(),
    end_time: new Date().toISOString(),
    task_name: task,
    error: null,
    config: {},
    ...fields,
  };
}

/**
 * Counts what the runtime did, per task: finished runs (every outcome) and data changes that reached
 * a task's triggers. Emits "run" and "change" with the task name, so tests and benchmarks wait for
 * these instead of sleeping.
 */
export class Activity extends EventEmitter<{ run: [task: string]; change: [task: string]; activity: [a: RunActivity]; drift: [task: string] }> {
  private readonly runs = new Map<string, number>();
  private readonly changes = new Map<string, number>();
  private total = 0;

  /** A run of `task` finished. */
  ran(task: string): void {
    this.runs.set(task, (this.runs.get(task) ?? 0) + 1);
    this.total++;
    this.emit("run", task);
  }

  /** A run or drift check started or ended (for live views; runs also count through ran()). */
  report(a: RunActivity): void {
    this.emit("activity", a);
  }

  /** A drift check of `task` finished. */
  checked(task: string): void {
    this.emit("drift", task);
  }

  /** Watched data of `task` changed. */
  changed(task: string): void {
    this.changes.set(task, (this.changes.get(task) ?? 0) + 1);
    this.emit("change", task);
  }

  /** Finished runs of a task, or of all tasks. */
  runCount(task?: string): number {
    return task === undefined ? this.total : (this.runs.get(task) ?? 0);
  }

  /** Data changes seen by a task's triggers. */
  changeCount(task: string): number {
    return this.changes.get(task) ?? 0;
  }
}
