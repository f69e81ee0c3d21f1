import type { DaemonApiOptions } from "../api/daemon.ts";
import { clusterTag } from "./cluster.ts";
import type { HighAvailability } from "./high-availability.ts";

/**
 * What the daemon's API needs under high availability: the cluster tag on the self-registration
 * (members are found by it), the cluster status, the follower's redirect for task-changing calls,
 * and — on the leader — waiting until a change is stored in Consul before answering, so a client
 * that got its answer can rely on the change surviving a failover.
 */
export function haApiOptions(ha: HighAvailability): Pick<DaemonApiOptions, "tags" | "cluster" | "beforeChange" | "afterChange"> {
  return {
    tags: [clusterTag(ha.settings.clusterName)],
    cluster: async () => ({ ...(await ha.clusterStatus()) }),
    beforeChange: () => {
      if (!ha.isLeader()) throw ha.notLeaderError();
    },
    afterChange: () => ha.flushForApi(),
  };
}
