import type { HaSettings } from "./settings.ts";

/** KV key of a task's owner lock in shared mode. */
export function ownerKeyOf(s: HaSettings, task: string): string {
  return `${s.tasksPrefix}${task}/owner`;
}

/** KV key of this member's liveness lock in shared mode. */
export function aliveKeyOf(s: HaSettings): string {
  return `${s.alivePrefix}${s.id}`;
}
