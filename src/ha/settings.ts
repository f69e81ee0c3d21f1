import { hostname } from "node:os";
import { Duration, parseDuration } from "../config/duration.ts";
import type { CtsConfig, HighAvailabilityConfig } from "../config/types.ts";
import type { Problem } from "../task/validate.ts";

/** CTS's default session TTL. */
export const DEFAULT_SESSION_TTL_MS = 15_000;
/** The KV prefix every cluster lives under unless `parentPath` says otherwise. */
export const DEFAULT_PARENT_PREFIX = "consul-terraform-sync";
/** How often the compatibility check runs (CTS: every 5 minutes). */
export const COMPAT_INTERVAL_MS = 5 * 60_000;

/** High-availability settings with every default applied. */
export interface HaSettings {
  /** This instance's id (config `id`, default `cts-<hostname>`). */
  id: string;
  clusterName: string;
  /** KV prefix without a trailing slash. */
  parentPath: string;
  sessionTtlMs: number;
  lockDelayMs: number;
  namespace?: string;
  /** The configured instance address; undefined means "the API's own URL". */
  instanceAddress?: string;
  /** KV key of the leader lock. */
  lockKey: string;
  /** KV prefix of the stored task state (with a trailing slash). */
  statePrefix: string;
  /** KV prefix of the member records (with a trailing slash). */
  membersPrefix: string;
  /** "leader" (one runs everything) or "shared" (every healthy member runs a share). */
  mode: "leader" | "shared";
  /** Shared mode: KV prefix of the per-task owner locks and pins (`<prefix><task>/owner`, `<prefix><task>/pin`). */
  tasksPrefix: string;
  /** Shared mode: how long the membership must be unchanged before a starting member takes its first tasks. */
  settleMs: number;
  /** Shared mode: KV prefix of the liveness locks (`<prefix><id>`, held by each member's session). */
  alivePrefix: string;
  /** Session renewal period: half the TTL, so one lost renewal still leaves a retry before fencing. */
  renewIntervalMs: number;
  /** Retry period after a failed renewal. */
  renewRetryMs: number;
  /** A leader that has not renewed successfully for this long stops applying (see README). */
  fenceAfterMs: number;
}

const CLUSTER_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$/;

/** The instance id a config gives (CTS default `cts-<hostname>`). */
export function instanceIdOf(config: Pick<CtsConfig, "id">): string {
  return config.id ?? `cts-${hostname()}`;
}

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

/** Applies the defaults; call only on a config that passed `haProblems`. */
export function resolveHaSettings(config: Pick<CtsConfig, "id" | "highAvailability">): HaSettings {
  const ha = config.highAvailability!;
  const st = ha.cluster.storage ?? {};
  const parentPath = (st.parentPath ?? `${DEFAULT_PARENT_PREFIX}/${ha.cluster.name}`).replace(/^\/+|\/+$/g, "");
  const sessionTtlMs = st.sessionTtl !== undefined ? parseDuration(st.sessionTtl)! : DEFAULT_SESSION_TTL_MS;
  const renewIntervalMs = Math.max(250, Math.floor(sessionTtlMs / 2));
  return {
    id: instanceIdOf(config),
    clusterName: ha.cluster.name,
    parentPath,
    sessionTtlMs,
    lockDelayMs: st.lockDelay !== undefined ? parseDuration(st.lockDelay)! : 0,
    ...(st.namespace ? { namespace: st.namespace } : {}),
    ...(ha.instance?.address ? { instanceAddress: ha.instance.address.trim() } : {}),
    lockKey: `${parentPath}/leader`,
    statePrefix: `${parentPath}/state/`,
    membersPrefix: `${parentPath}/members/`,
    mode: ha.cluster.mode ?? "leader",
    settleMs: ha.cluster.settle !== undefined ? parseDuration(ha.cluster.settle)! : sessionTtlMs,
    tasksPrefix: `${parentPath}/tasks/`,
    alivePrefix: `${parentPath}/alive/`,
    renewIntervalMs,
    renewRetryMs: Math.max(100, Math.min(1000, Math.floor(sessionTtlMs / 10))),
    fenceAfterMs: sessionTtlMs,
  };
}

/** Consul's duration text for a TTL or delay ("15s", "0s", "1500ms"). */
export function consulDuration(ms: number): string {
  return Duration.ofMs(ms).toConsul();
}

/** Human text for logs: whole seconds from 1s up ("1s", "2m30s"), ms below. */
export function durationText(ms: number): string {
  const d = Duration.ofMs(ms);
  return (ms < 1000 ? d : d.round(Duration.ofMs(1000))).toString();
}
