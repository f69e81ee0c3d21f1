import { parseDuration } from "../time/duration.ts";
import type { Problem } from "../errors/problems.ts";
import type { CtsConfig, HighAvailabilityConfig } from "./types.ts";

// Checked at load, like every other block, so a bad highAvailability block fails before the
// daemon starts; src/ha/settings.ts then applies the defaults to a config that passed.

const CLUSTER_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$/;

/** Problems with `highAvailability` (and `id` when HA is on), fields named from the config root. */
export function haProblems(config: Pick<CtsConfig, "id" | "highAvailability">): Problem[] {
  const problems: Problem[] = [];
  const ha = config.highAvailability as HighAvailabilityConfig | undefined;
  if (ha === undefined) return problems;
  // The id names this instance in the lock, the member records and redirects.
  if (config.id !== undefined && (typeof config.id !== "string" || !/^[A-Za-z0-9_.-]{1,128}$/.test(config.id)))
    problems.push({ field: "id", message: `'${String(config.id).slice(0, 60)}' is not a valid instance id for high availability. Use letters, digits, '_', '.' and '-' (at most 128).` });
  if (typeof ha !== "object" || ha === null) return [...problems, { field: "highAvailability", message: "must be an object: { cluster: { name: \"my-cluster\" } }." }];
  const name = ha.cluster?.name;
  if (typeof name !== "string" || !CLUSTER_NAME.test(name))
    problems.push({
      field: "highAvailability.cluster.name",
      message: `${name === undefined ? "is missing" : `'${String(name).slice(0, 60)}' is not a valid cluster name`}. Name the cluster with letters, digits, '_', '.' and '-', e.g. cluster: { name: "cts-prod" }.`,
    });
  const mode = ha.cluster?.mode;
  if (mode !== undefined && mode !== "leader" && mode !== "shared")
    problems.push({ field: "highAvailability.cluster.mode", message: `'${String(mode).slice(0, 60)}' is not a cluster mode. Use "leader" (one instance runs every task) or "shared" (every healthy instance runs a share).` });
  if (ha.cluster?.settle !== undefined) {
    const ms = parseDuration(ha.cluster.settle);
    if (ms === undefined || ms > 10 * 60_000) problems.push({ field: "highAvailability.cluster.settle", message: `'${String(ha.cluster.settle)}' must be a duration between 0s and 10m, e.g. "15s".` });
  }
  const st = ha.cluster?.storage ?? {};
  if (st.parentPath !== undefined && (typeof st.parentPath !== "string" || st.parentPath.replace(/^\/+|\/+$/g, "") === "" || /\s|\/\/|(^|\/)\.\.?(\/|$)/.test(st.parentPath)))
    problems.push({ field: "highAvailability.cluster.storage.parentPath", message: `'${String(st.parentPath)}' is not a usable KV prefix. Use e.g. "consul-terraform-sync/cts-prod".` });
  if (st.sessionTtl !== undefined) {
    const ms = parseDuration(st.sessionTtl);
    if (ms === undefined || ms < 1000 || ms > 24 * 3_600_000)
      problems.push({
        field: "highAvailability.cluster.storage.sessionTtl",
        message: `'${String(st.sessionTtl)}' must be a duration between 1s and 24h, e.g. "15s" (Consul itself refuses less than its session_ttl_min, 10s unless the agent lowers it).`,
      });
  }
  if (st.lockDelay !== undefined) {
    const ms = parseDuration(st.lockDelay);
    if (ms === undefined || ms > 60_000) problems.push({ field: "highAvailability.cluster.storage.lockDelay", message: `'${String(st.lockDelay)}' must be a duration between 0s and 60s (Consul's limit).` });
  }
  if (st.namespace !== undefined && (typeof st.namespace !== "string" || st.namespace === ""))
    problems.push({ field: "highAvailability.cluster.storage.namespace", message: "must be a non-empty namespace name, or left out." });
  const addr = ha.instance?.address;
  if (addr !== undefined && (typeof addr !== "string" || addr.trim() === "" || /\s/.test(addr)))
    problems.push({ field: "highAvailability.instance.address", message: `'${String(addr)}' is not an address. Use how clients reach this instance's API, e.g. "http://cts-01.example.com:8558".` });
  return problems;
}
