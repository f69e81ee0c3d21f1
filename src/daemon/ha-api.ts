import type { DaemonApiOptions } from "./api.ts";
import { clusterTag } from "../ha/cluster.ts";
import type { ClusterMember } from "../ha/cluster-member.ts";

/**
 * What the daemon's API needs under high availability: the cluster tag on the self-registration
 * (members are found by it), the cluster status, the redirect for task-changing calls (to the
 * leader, or in shared mode to the task's owner), and waiting until a change is stored in Consul
 * before answering, so a client that got its answer can rely on the change surviving a failover.
 */
export function haApiOptions(ha: ClusterMember): Pick<DaemonApiOptions, "tags" | "cluster" | "beforeChange" | "afterChange" | "pin"> {
  const { mode } = ha;
  return {
    tags: [clusterTag(ha.settings.clusterName)],
    cluster: async () => ({ ...(await ha.clusterStatus()) }),
    beforeChange: (change) => ha.beforeChange(change),
    afterChange: () => ha.flushForApi(),
    // Shared mode: `PATCH {"pin": …}` puts a task on a member.
    ...(mode.pin ? { pin: (task: string, member: string | null) => mode.pin!(task, member) } : {}),
  };
}
