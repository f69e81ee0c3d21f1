import { followBlockingQuery, type AfterAnswer } from "../consul/blocking-query.ts";
import { CtsError, messageOf } from "../errors/cts-error.ts";
import type { Metrics } from "../metrics/metrics.ts";
import type { RetryNotice } from "../runtime/interfaces.ts";
import { TERRAFORM_STATE_LOCKED } from "../runtime/retry.ts";
import { buildClusterStatus, type ClusterStatus } from "./cluster.ts";
import type { ClusterMode, Leaving, MemberParts } from "./cluster-mode.ts";
import type { KvItem, KvRead } from "./kv.ts";
import type { LeaderSession, SessionLoss } from "./session.ts";
import { durationText, HA_WATCH_TIMING, UNAVAILABLE_RETRY_MS } from "./settings.ts";
import { isUnavailable } from "../consul/reachability.ts";
import { backoffDelay } from "../time/backoff.ts";

/** Options of leader election (`cts watch` flags, tests). */
export interface LeaderElectionOptions {
  /** Clear the stored state when this instance first becomes leader (`cts watch --reset-storage`). */
  resetStorage?: boolean;
  /** Where the leader gauge and leadership changes are recorded. */
  metrics?: Metrics;
  /** Told when this instance becomes (true) or stops being (false) the leader, and why (notifications). */
  onLeadership?: (leader: boolean, why: string) => void;
}

/** The leader as the lock names it. */
export interface LeaderInfo {
  id: string;
  address: string;
  /** When it acquired the lock (ISO time). */
  since?: string;
}

type Role = "follower" | "leader" | "stopped";

function parseLeader(value: string): LeaderInfo | undefined {
  try {
    const v = JSON.parse(value) as Partial<LeaderInfo>;
    return typeof v.id === "string" ? { id: v.id, address: typeof v.address === "string" ? v.address : "", ...(v.since ? { since: v.since } : {}) } : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Leader election (`mode: "leader"`): with its session every member competes for the lock at
 * `<parentPath>/leader`; the holder runs every task, the others mirror the stored state (so read
 * API calls answer the same everywhere) and wait for the lock. docs/clustering.md "Election"
 * explains the timing.
 */
export class LeaderElection implements ClusterMode {
  private role: Role = "follower";
  private leaderInfo: LeaderInfo | undefined;
  private leaderSince: string | undefined;
  private resetPending: boolean;

  constructor(
    private readonly m: MemberParts,
    private readonly opts: LeaderElectionOptions = {},
  ) {
    this.resetPending = opts.resetStorage === true;
    // Retries (a state lock left by the previous leader) run inside the runtime; a paused runtime
    // cancels them, so only the leader retries. The election only explains the lock in its own words.
    m.controller.onRetry((n) => this.explainRetry(n));
  }

  /** The task state's writes (src/state/kv-state.ts): only the leader writes, fenced with the leader lock. */
  fence(): string | undefined | null {
    return this.role === "leader" ? undefined : null;
  }

  // ---- what the API asks --------------------------------------------------------------------

  /** Whether this instance leads now. */
  isLeader(): boolean {
    return this.role === "leader";
  }

  /** The current leader, as far as this instance knows. */
  leader(): LeaderInfo | undefined {
    if (this.role === "leader") return { id: this.m.settings.id, address: this.m.address(), ...(this.leaderSince ? { since: this.leaderSince } : {}) };
    return this.leaderInfo;
  }

  /** A follower refuses task-changing calls with CTS's redirect to the leader. */
  beforeChange(): void {
    if (!this.isLeader()) throw this.notLeaderError();
  }

  /** The error a follower answers task-changing calls with (CTS's redirect). */
  notLeaderError(): CtsError {
    const l = this.leader();
    if (!l)
      return new CtsError(
        "HA_NO_LEADER",
        "external",
        `this instance is not the leader, and no leader is elected right now (a failover takes up to twice the session TTL, ${durationText(this.m.settings.sessionTtlMs * 2)}). Retry in a few seconds, or ask GET /v1/status/cluster.`,
        { detail: { status: 503 } },
      );
    return new CtsError("HA_NOT_LEADER", "usage", `this instance is not the leader. Redirect the request to the leader: id=${l.id}, address=${l.address || "(not configured)"}`, {
      detail: { status: 400, leader_id: l.id, leader_address: l.address },
    });
  }

  /** After a task-changing API call on the leader: waits (up to 5 s) until the change is stored in Consul. */
  async flushForApi(): Promise<void> {
    if (this.role !== "leader") return;
    if (!(await this.m.writer.flush(5_000)) && this.role === "leader")
      this.m.log.warn("ha: a task change is not stored in Consul yet (still retrying); it is lost if this leader fails before the write succeeds");
  }

  /** Members, their health and the leader, read from Consul (any member answers the same). */
  clusterStatus(): Promise<ClusterStatus> {
    return buildClusterStatus(this.m.kv, this.m.settings);
  }

  // ---- taking part --------------------------------------------------------------------------

  join(): void {
    const s = this.m.settings;
    this.m.log.info(`ha: joining cluster '${s.clusterName}' as '${s.id}'`, { parent_path: s.parentPath, session_ttl: durationText(s.sessionTtlMs), lock_delay: durationText(s.lockDelayMs) });
  }

  /** Follows the leader lock with the one blocking-query loop while the session lives: a free lock is tried for, a lost one steps down. */
  hold(session: LeaderSession, ended: AbortSignal): Promise<void> {
    return followBlockingQuery<KvRead<KvItem | undefined>>(
      {
        read: (index, signal) => this.m.kv.get(this.m.settings.lockKey, { index, signal }),
        answered: (read) => this.lockChanged(session, read.data),
        failed: (err, n) => {
          if (this.m.stopping.aborted) return "stop";
          this.joinFailed(err, n);
          // Consul unreachable or without a leader: asked again within a second (a server holds a
          // read while it has no leader), so a lock freed when quorum returns is seen at once.
          return isUnavailable(err) ? backoffDelay({ baseMs: HA_WATCH_TIMING.backoffBaseMs, maxMs: UNAVAILABLE_RETRY_MS }, n) : undefined;
        },
      },
      ended,
      HA_WATCH_TIMING,
      Math.random,
      this.m.clock,
    );
  }

  /** A failed election step, logged at the first and every tenth attempt. */
  joinFailed(err: unknown, failures: number): void {
    if (failures !== 1 && failures % 10 !== 0) return;
    if (err instanceof CtsError && err.category === "usage") this.m.log.error(`ha: cannot take part in the election: ${err.message}`);
    else this.m.log.warn(`ha: cannot take part in the election (attempt ${failures}): ${messageOf(err)}`);
  }

  sessionLost(loss: SessionLoss): void {
    if (this.role === "leader") this.stepDown(loss.message);
    else if (this.role === "follower") this.m.log.info(`ha: session ended (${loss.message}); a new one is created when Consul answers`);
  }

  /** A follower mirrors the stored state while its controller is paused. */
  mirrorApplies(): boolean {
    return this.role === "follower" && this.m.controller.isPaused;
  }

  otherLeader(): string | undefined {
    return this.role === "leader" ? undefined : this.leaderInfo?.id;
  }

  async leave(): Promise<Leaving> {
    const s = this.m.settings;
    const wasLeader = this.role === "leader";
    this.role = "stopped";
    if (wasLeader) this.opts.metrics?.leadership(false);
    if (!wasLeader) return { ranTasks: false, offlineSkips: ["destroying the HA session"] };
    return {
      ranTasks: true,
      offlineSkips: [`releasing the leader lock (Consul frees it when the session's TTL ${durationText(s.sessionTtlMs)} runs out)`, "destroying the HA session"],
      // Release first: a release has no lock delay, so a follower takes over at once.
      beforeDestroy: (session) => this.m.kv.release(s.lockKey, session.id, 2_000).then(
        () => undefined,
        (e) => this.m.log.warn(`ha: releasing the leader lock failed: ${messageOf(e)}`),
      ),
      done: (offline) => this.m.log.info(offline ? "ha: stopped leading; the leader lock goes with the session's TTL (Consul is unreachable)" : "ha: released leadership (graceful stop)"),
    };
  }

  // ---- the lock -----------------------------------------------------------------------------

  /** The role now (a method, so checks after an await are not narrowed away by the compiler). */
  private is(role: Role): boolean {
    return this.role === role;
  }

  /** The leader lock as Consul holds it now: follow the leader, step down, or try to take it. */
  private async lockChanged(session: LeaderSession, lock: KvItem | undefined): Promise<AfterAnswer> {
    const s = this.m.settings;
    const holder = lock?.session;
    const info = holder ? parseLeader(lock!.value) : undefined;
    if (info?.id !== this.leaderInfo?.id && this.role !== "leader") {
      this.leaderInfo = info;
      if (info) void this.m.record.check(false);
    } else this.leaderInfo = info;
    if (this.role === "leader") {
      if (holder === session.id) return;
      // The lock is free or someone else's now: Terraform is killed at once, no graceful stop that saves state.
      const killed = this.m.controller.fence(0);
      this.stepDown(
        `the leader lock is no longer held by this instance's session (it was deleted or released in Consul, or the session expired while this process was stalled)${killed ? `; ${killed} run(s) in progress killed at once` : ""}`,
      );
      return;
    }
    if (holder || this.role !== "follower") return;
    this.m.log.info(`ha: attempting to acquire leadership lock: lock_path=${s.lockKey}`);
    const since = new Date(this.m.clock.wallNow()).toISOString();
    const acquired = await this.m.kv.acquire(s.lockKey, session.id, JSON.stringify({ id: s.id, address: this.m.address(), since }));
    if (acquired && this.m.session() === session && session.alive && this.is("follower")) {
      this.leaderSince = since;
      await this.becomeLeader(session);
      return;
    }
    // Another instance won, or the lock delay of an invalidated session is still running: read afresh.
    return { restartAfterMs: Math.max(200, Math.min(1_000, s.lockDelayMs || 500)) };
  }

  private async becomeLeader(session: LeaderSession): Promise<void> {
    const { settings: s, controller, log, kv } = this.m;
    this.role = "leader";
    this.opts.metrics?.leadership(true);
    log.info(`ha: acquired leadership lock: id=${s.id}`, { lock_path: s.lockKey });
    this.opts.onLeadership?.(true, "acquired the leader lock");
    this.m.mirror.stop();
    this.m.writer.setSession(session.id);
    try {
      if (this.resetPending) {
        // Fenced like every write: only the lock holder may clear the state.
        const ok = await kv.txn([
          { verb: "check-session", key: s.lockKey, session: session.id },
          { verb: "delete-tree", key: s.statePrefix },
        ]);
        if (ok) {
          this.resetPending = false;
          log.info(`ha: --reset-storage: cleared the stored task state under ${s.statePrefix}`);
        }
      }
      const state = await this.m.readState();
      if (!this.is("leader") || this.m.session() !== session) return;
      for (const p of state.problems) log.warn(`ha: ignoring a stored entry that cannot be read: ${p}`);
      // What the previous leader applied replaces what this instance knew: a task with the same inputs is a no-op.
      for (const p of controller.restore(state, { applied: true })) log.error(`ha: ${p}`);
      void this.m.record.check(false);
      log.info(`ha: leading: running every task once (a task whose inputs equal what was applied last is a no-op), then watching`, { tasks: controller.taskNames().length });
      await controller.resume();
    } catch (err) {
      if (!this.is("leader")) return;
      // Leading without the stored state would silently undo API changes: give the lock back.
      log.error(`ha: could not read the stored state from Consul (${messageOf(err)}); releasing leadership to retry`);
      this.stepDown("the stored state could not be read");
      await kv.release(s.lockKey, session.id, 3_000).catch(() => undefined);
    }
  }

  /** Stops running tasks at once (runs in progress are cancelled) and becomes a follower. */
  private stepDown(reason: string): void {
    if (this.role !== "leader") return;
    this.role = "follower";
    this.opts.metrics?.leadership(false);
    this.leaderSince = undefined;
    this.m.writer.setSession(undefined);
    this.m.log.warn(`ha: lost leadership: ${reason}. Stopped running tasks; this instance is now a follower`);
    this.opts.onLeadership?.(false, reason);
    void this.m.controller.pause(this.m.stopGraceMs).then(() => {
      if (this.is("follower")) this.m.mirror.start();
    });
  }

  private explainRetry(notice: RetryNotice): void {
    if (this.role !== "leader" || notice.code !== TERRAFORM_STATE_LOCKED) return;
    this.m.log.warn(
      `ha: task '${notice.task}': its Terraform state is locked (most likely the previous leader's apply is still finishing or its lock has not expired); running it again in ${Math.round(notice.delayMs / 100) / 10} s`,
      { task: notice.task, attempt: notice.attempt },
    );
  }
}
