import { CtsError } from "../errors/cts-error.ts";
import type { Logger } from "../log/logger.ts";
import type { HaControl } from "../runtime/interfaces.ts";
import { buildClusterStatus, type ClusterStatus } from "./cluster.ts";
import type { HaKv } from "./kv.ts";
import type { ClusterView } from "./membership.ts";
import { durationText, type HaSettings } from "./settings.ts";

/** `GET /v1/status/cluster` in shared mode: the HA status plus who runs what. */
export interface SharedClusterStatus extends ClusterStatus {
  mode: "shared";
  /** Member id → the tasks whose owner lock it holds. */
  tasks_by_member: Record<string, string[]>;
  /** Enabled tasks nobody holds right now (a takeover in progress, or no healthy member). */
  unowned: string[];
}

const MEMBER_ID = /^[A-Za-z0-9_.-]{1,128}$/;

/**
 * Throws the redirect to the owner when `task` exists and another member runs it (CTS's leader
 * redirect, per task: 400 naming the owner's id and address). A held plan is decided where it is
 * held: approve and reject name the command to send to the owner. The request is not forwarded:
 * the owner's address comes from Consul, and a client's token must not follow data from Consul.
 */
export function ownerRedirect(task: string | undefined, controller: HaControl, view: ClusterView, s: HaSettings, action?: "approve" | "reject" | "drift"): void {
  if (!task || controller.mine(task) || !controller.view(task)) return;
  const owner = view.ownerOf(task);
  if (!owner)
    throw new CtsError("HA_NO_OWNER", "external", `task '${task}' has no owner right now (a takeover takes up to twice the session TTL, ${durationText(s.sessionTtlMs * 2)}). Retry in a few seconds.`, {
      task,
      detail: { status: 503 },
    });
  const decide =
    action === "approve" || action === "reject"
      ? ` It holds the task's plan (the plan file is in its working dir): ${owner.address ? `cts ${action} ${task} --http-addr ${owner.address} (POST ${owner.address}/v1/tasks/${encodeURIComponent(task)}/${action})` : `run cts ${action} ${task} against it`}.`
      : "";
  throw new CtsError("HA_NOT_OWNER", "usage", `this instance does not run task '${task}'. Redirect the request to its owner: id=${owner.id}, address=${owner.address || "(not configured)"}.${decide}`, {
    task,
    detail: { status: 400, owner_id: owner.id, owner_address: owner.address },
  });
}

/** Stores a pin at `<parentPath>/tasks/<task>/pin` (any member may; the owners move when every member sees it). */
export async function storePin(kv: HaKv, s: HaSettings, controller: HaControl, log: Logger, task: string, member: string | null): Promise<void> {
  if (!controller.view(task)) throw new CtsError("TASK_NOT_FOUND", "usage", `no task named '${task}'.`, { task });
  const key = `${s.tasksPrefix}${task}/pin`;
  if (member === null) await kv.delete(key);
  else {
    if (!MEMBER_ID.test(member)) throw new CtsError("TASK_INVALID", "usage", `'${member.slice(0, 60)}' is not a member id. Pin to an id from GET /v1/status/cluster.`, { task });
    await kv.put(key, member);
  }
  log.info(`ha: task '${task}' ${member === null ? "unpinned" : `pinned to '${member}'`} through the API`, { task });
}

/** The cluster status with the holders of the owner locks, read from Consul (every member answers alike). */
export async function sharedClusterStatus(kv: HaKv, s: HaSettings, controller: HaControl): Promise<SharedClusterStatus> {
  const [base, locks] = await Promise.all([buildClusterStatus(kv, s), kv.list(s.tasksPrefix)]);
  const byMember: Record<string, string[]> = {};
  const owned = new Set<string>();
  for (const it of locks.data) {
    if (!it.key.endsWith("/owner") || !it.session) continue;
    const task = it.key.slice(s.tasksPrefix.length, -"/owner".length);
    try {
      const id = (JSON.parse(it.value) as { id?: unknown }).id;
      if (typeof id !== "string") continue;
      (byMember[id] ??= []).push(task);
      owned.add(task);
    } catch {
      /* an unreadable lock value names no owner */
    }
  }
  for (const list of Object.values(byMember)) list.sort();
  const unowned = controller.taskNames().filter((t) => !owned.has(t) && controller.view(t)?.enabled).sort();
  return { ...base, mode: "shared", tasks_by_member: byMember, unowned };
}
