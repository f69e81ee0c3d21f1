import type { TaskEvent } from "../runtime/events.ts";
import type { HoldRecord } from "../runtime/holds.ts";
import type { HaControl, TaskChange } from "../runtime/interfaces.ts";
import type { HaSettings } from "./settings.ts";
import { stateKeys, type StoredTask } from "./state.ts";
import type { StateWriter } from "./writer.ts";

/** KV key of a task's owner lock in shared mode. */
export function ownerKeyOf(s: HaSettings, task: string): string {
  return `${s.tasksPrefix}${task}/owner`;
}

/** KV key of this member's liveness lock in shared mode. */
export function aliveKeyOf(s: HaSettings): string {
  return `${s.alivePrefix}${s.id}`;
}

/**
 * Shared mode's stored state: a member writes the events of the tasks it owns and the changes made
 * through its API, each write fenced with the task's owner lock, or — for a task created here that
 * nobody owns yet — with this member's liveness lock.
 */
export class OwnedState {
  constructor(
    private readonly writer: StateWriter,
    private readonly settings: HaSettings,
    private readonly controller: HaControl,
    /** The set of tasks changed: assignments must be computed again. */
    private readonly tasksChanged: () => void,
  ) {}

  private fenceFor(task: string): string {
    return this.controller.mine(task) ? ownerKeyOf(this.settings, task) : aliveKeyOf(this.settings);
  }

  /** A task was created, replaced, enabled, disabled or deleted through this member's API. */
  change(change: TaskChange): void {
    const p = this.settings.statePrefix;
    const fence = this.fenceFor(change.task);
    if (change.kind === "deleted") {
      const tombstone: StoredTask = { name: change.task, origin: "config", enabled: false, deleted: true, updated_at: new Date().toISOString() };
      this.writer.set(stateKeys.task(p, change.task), change.origin === "config" ? JSON.stringify(tombstone) : null, fence);
      this.writer.set(stateKeys.events(p, change.task), null, fence);
      this.writer.set(stateKeys.hold(p, change.task), null, fence);
      this.tasksChanged();
      return;
    }
    const v = this.controller.view(change.task);
    if (!v) return;
    const record: StoredTask = { name: v.name, origin: v.origin, enabled: v.enabled, ...(v.spec ? { spec: v.spec } : {}), updated_at: new Date().toISOString() };
    this.writer.set(stateKeys.task(p, change.task), JSON.stringify(record), fence);
    if (change.kind === "created") this.tasksChanged();
  }

  /** An owned task's held plan changed (summary and reasons only: the plan file stays with the member that made it). */
  hold(task: string, record: HoldRecord | undefined): void {
    if (!this.controller.mine(task)) return;
    this.writer.set(stateKeys.hold(this.settings.statePrefix, task), record ? JSON.stringify(record) : null, ownerKeyOf(this.settings, task));
  }

  /** A run of an owned task recorded an event (events of tasks owned elsewhere are never written here). */
  event(event: TaskEvent): void {
    if (!this.controller.mine(event.task_name)) return;
    this.writer.set(stateKeys.events(this.settings.statePrefix, event.task_name), JSON.stringify(this.controller.events.list(event.task_name)), ownerKeyOf(this.settings, event.task_name));
  }
}
