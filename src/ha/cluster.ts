import { messageOf } from "../errors/cts-error.ts";
import type { HaKv } from "./kv.ts";
import type { HaSettings } from "./settings.ts";

/** The service name every cts instance registers under (as src/daemon/registration.ts). */
export const CTS_SERVICE_NAME = "consul-terraform-sync";

/** The tag that marks the members of one cluster in the self-registrations. */
export function clusterTag(clusterName: string): string {
  return `cts-cluster:${clusterName}`;
}

/** One member as `GET /v1/status/cluster` shows it (CTS's fields first). */
export interface ClusterMember {
  id: string;
  address: string;
  /** Every health check of its self-registration passes. */
  healthy: boolean;
  leader: boolean;
  service_name: string;
  /** Whether Consul has a self-registration for it (tagged `cts-cluster:<name>`). */
  registered: boolean;
  /** False when its last compatibility check found a task it could not run. */
  compatible: boolean;
  /** What its compatibility check found. */
  compatibility_problems: string[];
}

/** The body of `GET /v1/status/cluster` (the API adds `request_id`). */
export interface ClusterStatus {
  cluster_name: string;
  leader: { id: string; address: string } | null;
  members: ClusterMember[];
}

/**
 * Reads the cluster from Consul: members are the self-registrations tagged for the cluster plus
 * the member records under `<parentPath>/members/`; the leader is whoever's session holds the
 * lock. Every member computes the same answer.
 */
export async function buildClusterStatus(kv: HaKv, s: HaSettings): Promise<ClusterStatus> {
  const [regs, records, lock] = await Promise.all([
    kv.healthService(CTS_SERVICE_NAME, clusterTag(s.clusterName)).catch((err) => {
      // Without registrations the records still name the members; health is then unknown (false).
      return { error: messageOf(err) } as const;
    }),
    kv.list(s.membersPrefix),
    kv.get(s.lockKey),
  ]);
  let leader: ClusterStatus["leader"] = null;
  if (lock.data?.session) {
    try {
      const v = JSON.parse(lock.data.value) as { id?: string; address?: string };
      if (typeof v.id === "string") leader = { id: v.id, address: v.address ?? "" };
    } catch {
      /* a lock value we cannot read names no leader */
    }
  }
  const byId = new Map<string, ClusterMember>();
  const member = (id: string): ClusterMember => {
    let m = byId.get(id);
    if (!m) {
      m = { id, address: "", healthy: false, leader: leader?.id === id, service_name: CTS_SERVICE_NAME, registered: false, compatible: true, compatibility_problems: [] };
      byId.set(id, m);
    }
    return m;
  };
  for (const r of records.data) {
    try {
      const v = JSON.parse(r.value) as { id?: string; address?: string; compat?: unknown };
      if (typeof v.id !== "string") continue;
      const m = member(v.id);
      if (typeof v.address === "string") m.address = v.address;
      if (Array.isArray(v.compat)) {
        m.compatibility_problems = v.compat.filter((p): p is string => typeof p === "string");
        m.compatible = m.compatibility_problems.length === 0;
      }
    } catch {
      /* skip unreadable records */
    }
  }
  if (Array.isArray(regs)) {
    for (const r of regs) {
      const m = member(r.Service.ID);
      m.registered = true;
      m.healthy = (r.Checks ?? []).every((c) => c.Status === "passing");
      if (!m.address) m.address = `http://${r.Service.Address || r.Node.Address}:${r.Service.Port}`;
    }
  }
  if (leader) {
    const m = member(leader.id);
    if (!m.address) m.address = leader.address;
    if (!leader.address) leader.address = m.address;
  }
  const members = [...byId.values()].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  return { cluster_name: s.clusterName, leader, members };
}
