import type { DaemonApiOptions } from "./api.ts";
import { clusterTag } from "../ha/cluster.ts";
import type { HighAvailability } from "../ha/high-availability.ts";
import type { SharedCluster } from "../ha/shared.ts";

/**
 * What the daemon's API needs under high availability: the cluster tag on the self-registration
 * (members are found by it), the cluster status, the redirect for task-changing calls (to the
 * leader, or in shared mode to the task's owner), and waiting until a change is stored in Consul
 * before answering, so a client that got its answer can rely on the change surviving a failover.
 */
export function haApiOptions(ha: HighAvailability | SharedCluster): Pick<DaemonApiOptions, "tags" | "cluster" | "beforeChange" | "afterChange" | "pin"> {
  const common = {
    tags: [clusterTag(ha.settings.clusterName)],
    cluster: async () => ({ ...(await ha.clusterStatus()) }),
    afterChange: () => ha.flushForApi(),
  };
  if ("pin" in ha) return { ...common, beforeChange: (change) => ha.beforeChange(change), pin: (task, member) => ha.pin(task, member) };
  return {
    ...common,
    beforeChange: () => {
      if (!ha.isLeader()) throw ha.notLeaderError();
    },
  };
}
