import type { ApiBody } from "./api-client.ts";
import { table } from "./output.ts";
import { counted } from "../values/counted.ts";

/**
 * `cts status --cluster` as text: the members with their health and, in shared mode, the tasks
 * each one runs (the holders of the tasks' owner locks) and the tasks nobody runs right now.
 */
export function clusterText(body: ApiBody): string {
  const members = (body.members as ApiBody[] | undefined) ?? [];
  const byMember = (body.tasks_by_member as Record<string, string[]> | undefined) ?? {};
  const shared = body.mode === "shared";
  const head = `Cluster '${body.cluster_name}' (${shared ? "shared mode: every healthy member runs a share" : `leader mode: ${body.leader ? `leader ${body.leader.id}` : "no leader elected"}`})\n\n`;
  const rows = members.map((m) => [
    m.id,
    m.address || "-",
    m.healthy ? "healthy" : "unhealthy",
    shared ? String(byMember[m.id]?.length ?? 0) : m.leader ? "leader" : "follower",
  ]);
  let out = head + table([["MEMBER", "ADDRESS", "HEALTH", shared ? "TASKS" : "ROLE"], ...rows]);
  if (!shared) return out;
  const owners = Object.keys(byMember).sort();
  for (const id of owners) out += `\n==> ${id}: ${counted(byMember[id]!.length, "task")}\n  ${byMember[id]!.join("\n  ")}\n`;
  const unowned = (body.unowned as string[] | undefined) ?? [];
  if (unowned.length) out += `\n==> not running anywhere right now (a takeover in progress?): ${unowned.join(", ")}\n`;
  return out;
}
