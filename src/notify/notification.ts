import type { NotificationKind } from "../config/notifications.ts";
import type { TaskEvent } from "../state/records.ts";

export type { NotificationKind } from "../config/notifications.ts";

/** The version of the JSON body; a change that breaks a receiver raises it. */
export const NOTIFICATION_VERSION = 1;

/** What a notification says, before the notifier stamps it (id, time, instance, links). */
export interface NotificationInput {
  kind: NotificationKind;
  /** The task it is about; null for `leader_changed`. */
  task: string | null;
  /** One sentence a person reads. */
  summary: string;
  detail: NotificationDetail;
}

/** The facts behind the summary (each present when it applies). */
export interface NotificationDetail {
  /** The task event's id and outcome (GET /v1/status/tasks/{task}?include=events lists it). */
  event_id?: string;
  outcome?: string;
  error?: string;
  changes?: { add: number; change: number; destroy: number };
  /** The resources changed or to change, by address (at most 20). */
  resources?: Array<{ address: string; action: string }>;
  /** A held plan: why, and the guards' reasons. */
  hold?: { why: "guards" | "always"; reasons: string[]; held_at: string };
  /** A drift check: whether the drift was applied back. */
  drift?: { corrected: boolean };
  /** Terraform Cloud's run page. */
  run_url?: string;
  /** leader_changed: whether this instance now leads, and why it changed. */
  leader?: boolean;
  reason?: string;
}

/** The JSON body (format "json"), as documented in docs/operations.md "Notifications". */
export interface Notification extends NotificationInput {
  version: typeof NOTIFICATION_VERSION;
  /** Unique per notification; also the `X-Cts-Delivery` header (the same on every retry). */
  id: string;
  /** When it happened (ISO time). */
  time: string;
  /** The cts instance that sent it (its `id`). */
  instance: string;
  /** Where a person looks next: the task's status in the API, and the dashboard. */
  links?: { status: string; dashboard: string };
}

const RESOURCES_SENT = 20;
const ERROR_CHARS = 1_000;

/** `text` shortened to `max` characters. */
function clip(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

function changesText(c: TaskEvent["changes"]): string {
  return c ? `${c.add} to add, ${c.change} to change, ${c.destroy} to destroy` : "changes present";
}

/** An event's message without the "Task 'x': " the summary already says. */
function errorText(e: TaskEvent): string {
  return clip((e.error?.message ?? "").replace(`Task '${e.task_name}': `, ""), ERROR_CHARS);
}

function common(e: TaskEvent): NotificationDetail {
  return {
    event_id: e.id,
    ...(e.outcome ? { outcome: e.outcome } : {}),
    ...(e.changes ? { changes: e.changes } : {}),
    ...(e.resources?.length ? { resources: e.resources.slice(0, RESOURCES_SENT) } : {}),
    ...(e.run_url ? { run_url: e.run_url } : {}),
  };
}

/**
 * The notification a recorded task event makes, if any. `before` are the task's events before it,
 * newest first (the event store's): a success after a failed run is a recovery; a held plan is told
 * once, not again each time a trigger finds it still held.
 */
export function notificationOfEvent(e: TaskEvent, before: readonly TaskEvent[]): NotificationInput | undefined {
  const task = e.task_name;
  if (e.outcome === "held" && e.hold) {
    const heldAt = e.hold.heldAt;
    if (before.some((b) => b.outcome === "held" && b.hold?.heldAt === heldAt)) return undefined;
    const guards = e.hold.why === "guards";
    const decide = `cts approve ${task} applies it, cts reject ${task} discards it`;
    return {
      kind: guards ? "guard_refused" : "held",
      task,
      summary: guards
        ? `Task '${task}': a plan guard refused the plan (${e.hold.reasons.join("; ")}); it is held: ${decide}.`
        : `Task '${task}': a plan (${changesText(e.changes)}) waits for approval: ${decide}.`,
      detail: { ...common(e), hold: { why: e.hold.why, reasons: e.hold.reasons, held_at: heldAt } },
    };
  }
  if (e.outcome === "failed" || (!e.success && e.outcome === undefined)) {
    return { kind: "failed", task, summary: `Task '${task}' failed: ${errorText(e)}`, detail: { ...common(e), error: errorText(e) } };
  }
  if (e.outcome === "drift") {
    const corrected = e.drift?.corrected === true;
    return {
      kind: "drift",
      task,
      summary: `Task '${task}': drift found, the infrastructure changed out of band (${changesText(e.changes)}); ${corrected ? "applied again (corrected)" : "not corrected"}.`,
      detail: { ...common(e), drift: { corrected }, ...(e.error ? { error: errorText(e) } : {}) },
    };
  }
  if (e.success) {
    // The newest earlier run (drift checks are not runs of the task's inputs).
    const last = before.find((b) => b.outcome !== "drift");
    if (last && !last.success && (last.outcome === "failed" || last.outcome === undefined))
      return { kind: "recovered", task, summary: `Task '${task}' recovered: its run ${e.outcome ?? "succeeded"} after the last one failed.`, detail: common(e) };
  }
  return undefined;
}

/** The notification of a leadership change of this instance. */
export function leaderNotification(instance: string, leader: boolean, why: string): NotificationInput {
  return {
    kind: "leader_changed",
    task: null,
    summary: leader ? `cts instance '${instance}' became the high-availability leader (${why}); it runs the tasks now.` : `cts instance '${instance}' stopped being the high-availability leader: ${why}.`,
    detail: { leader, reason: why },
  };
}
