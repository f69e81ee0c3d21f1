import { hostname } from "node:os";
import { AROUND_JITTER, type Backoff } from "../time/backoff.ts";
import type { BlockingTiming } from "../consul/blocking-query.ts";
import { Duration, parseDuration } from "../time/duration.ts";
import type { CtsConfig } from "../config/types.ts";

/** CTS's default session TTL. */
export const DEFAULT_SESSION_TTL_MS = 15_000;
/** The KV prefix every cluster lives under unless `parentPath` says otherwise. */
export const DEFAULT_PARENT_PREFIX = "consul-terraform-sync";
/** How often the compatibility check runs (CTS: every 5 minutes). */
export const COMPAT_INTERVAL_MS = 5 * 60_000;

/** Longest wait between two attempts while Consul is unavailable (unreachable, or no leader): its return is seen within a second. */
export const UNAVAILABLE_RETRY_MS = 1_000;

/**
 * Pacing of every high-availability and shared-mode watcher (the one blocking-query loop): CTS's
 * 100 ms + 0–20 ms between reads; after a failed read 0.25–0.5 s, doubling up to 2.5–5 s, so a
 * failover never waits on a long backoff.
 */
export const HA_WATCH_TIMING: BlockingTiming = Object.freeze({ minIntervalMs: 100, jitterMs: 20, backoffBaseMs: 500, backoffMaxMs: 5_000 });

/** Retries of joining the cluster (creating a session, a member's liveness lock): from twice the renewal retry period up to 5 s, ±20 %. */
export function joinBackoff(settings: Pick<HaSettings, "renewRetryMs">): Backoff {
  return { baseMs: 2 * settings.renewRetryMs, maxMs: 5_000, jitter: AROUND_JITTER };
}

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

/** The instance id a config gives (CTS default `cts-<hostname>`). */
export function instanceIdOf(config: Pick<CtsConfig, "id">): string {
  return config.id ?? `cts-${hostname()}`;
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
