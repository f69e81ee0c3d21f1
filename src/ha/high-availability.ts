import { backoffDelay } from "../backoff.ts";
import { followBlockingQuery, type AfterAnswer } from "../consul/blocking-query.ts";
import { atMost, pause } from "../pause.ts";
import type { LoadedConfig } from "../config/load.ts";
import type { ConsulClient } from "../consul/client.ts";
import { CtsError, messageOf } from "../errors.ts";
import type { Logger } from "../log.ts";
import type { Metrics } from "../metrics/metrics.ts";
import type { HaControl, RetryNotice } from "../runtime/interfaces.ts";
import { TERRAFORM_STATE_LOCKED } from "../runtime/retry.ts";
import { buildClusterStatus, type ClusterStatus } from "./cluster.ts";
import { checkIdentity, type AnswersAt } from "./identity.ts";
import type { HaKv, KvItem, KvRead } from "./kv.ts";
import { MemberReporter } from "./member.ts";
import { StateMirror } from "./mirror.ts";
import { LeaderSession, type SessionLoss } from "./session.ts";
import { COMPAT_INTERVAL_MS, durationText, HA_WATCH_TIMING, joinBackoff, resolveHaSettings, type HaSettings } from "./settings.ts";
import { parseState, type StoredState } from "../state/stored-state.ts";
import type { KvAccess } from "../state/kv-state.ts";
import type { StateWriter } from "./writer.ts";

/** The cluster's Consul KV and its fenced state writer (made by the composition root, which hands the writer to the task state too). */
export interface ClusterStore {
  kv: HaKv;
  writer: StateWriter;
}

/** What high availability needs from the runtime (a subset of Runtime). */
export interface HaRuntime {
  controller: HaControl;
  /** The process's one Consul client (HA does not close it: the runtime does). */
  consul: ConsulClient;
  log: Logger;
}

/** Options for tests and the CLI. */
export interface HighAvailabilityOptions {
  /** Clear the stored state when this instance first becomes leader (`cts watch --reset-storage`). */
  resetStorage?: boolean;
  /** Period of the compatibility check (default 5 minutes). */
  compatIntervalMs?: number;
  /** How long a leader that steps down waits for cancelled runs (default 10 s). */
  stopGraceMs?: number;
  /** Where the leader gauge and leadership changes are recorded. */
  metrics?: Metrics;
  /** The identity check's probe: does anything answer at a member's address (absent: no check at start). */
  answersAt?: AnswersAt;
}

/** The leader as the lock names it. */
export interface LeaderInfo {
  id: string;
  address: string;
  /** When it acquired the lock (ISO time). */
  since?: string;
}

type Role = "idle" | "follower" | "leader" | "stopped";

function parseLeader(value: string): LeaderInfo | undefined {
  try {
    const v = JSON.parse(value) as Partial<LeaderInfo>;
    return typeof v.id === "string" ? { id: v.id, address: typeof v.address === "string" ? v.address : "", ...(v.since ? { since: v.since } : {}) } : undefined;
  } catch {
    return undefined;
  }
}

/**
 * High availability: every instance holds a Consul session and competes for the lock at
 * `<parentPath>/leader`; the holder runs tasks, the others mirror the stored state (so read API
 * calls answer the same everywhere) and wait for the lock. README "High availability" explains the timing.
 */
export class HighAvailability implements KvAccess {
  readonly settings: HaSettings;
  private readonly controller: HaControl;
  private readonly log: Logger;
  private readonly kv: HaKv;
  private readonly writer: StateWriter;
  private role: Role = "idle";
  private session: LeaderSession | undefined;
  private sessionAbort = new AbortController();
  /** Ends every wait when the instance stops, so the process exits at once. */
  private readonly stopping = new AbortController();
  private leaderInfo: LeaderInfo | undefined;
  private leaderSince: string | undefined;
  private localAddress = "";
  private resetPending: boolean;
  private compatTimer: ReturnType<typeof setInterval> | undefined;
  private lastState: StoredState | undefined;
  private election: Promise<void> | undefined;
  private readonly stopGraceMs: number;
  private readonly mirror: StateMirror;
  private readonly member: MemberReporter;

  constructor(
    rt: HaRuntime,
    loaded: LoadedConfig,
    store: ClusterStore,
    private readonly opts: HighAvailabilityOptions = {},
  ) {
    if (!loaded.config.highAvailability) throw new CtsError("CTS_INTERNAL", "internal", "HighAvailability needs highAvailability in the config");
    this.settings = resolveHaSettings(loaded.config);
    this.controller = rt.controller;
    this.log = rt.log.child("ha");
    this.resetPending = opts.resetStorage === true;
    this.stopGraceMs = opts.stopGraceMs ?? 10_000;
    // On the process's one Consul client: renewals follow a rotated token file like every other call.
    this.kv = store.kv;
    this.writer = store.writer;
    this.mirror = new StateMirror(this.kv, this.settings.statePrefix, this.controller, this.log, {
      applies: () => this.role === "follower" && this.controller.isPaused,
      onState: (state) => (this.lastState = state),
      onApiTasksChanged: () => void this.member.check(false),
    });
    this.member = new MemberReporter(this.kv, this.settings, loaded, this.log, {
      address: () => this.address,
      otherLeader: () => (this.role === "leader" ? undefined : this.leaderInfo?.id),
      apiTasks: () =>
        [...(this.lastState?.tasks.values() ?? [])].filter((t) => t.origin === "api" && t.spec && !t.deleted).map((t) => ({ name: t.name, class: "ModuleTask", module: t.spec!.module })),
      active: () => this.role !== "stopped",
    });
    // Nothing runs until this instance leads; API calls in the meantime are redirected.
    void this.controller.pause(0);
    // Retries (a state lock left by the previous leader) run inside the runtime; a paused runtime
    // cancels them, so only the leader retries. HA only explains the lock in its own words.
    this.controller.onRetry((n) => this.explainRetry(n));
  }

  /** The task state's writes (src/state/kv-state.ts): only the leader writes, fenced with the leader lock. */
  fence(): string | undefined | null {
    return this.role === "leader" ? undefined : null;
  }

  // ---- what the API and CLI ask -------------------------------------------------------------

  /** The API's own URL, advertised when `instance.address` is not configured. */
  setLocalAddress(url: string): void {
    this.localAddress = url;
  }

  /** How clients reach this instance. */
  get address(): string {
    return this.settings.instanceAddress ?? this.localAddress;
  }

  /** This instance's id. */
  get id(): string {
    return this.settings.id;
  }

  /** Whether this instance leads now. */
  isLeader(): boolean {
    return this.role === "leader";
  }

  /** The current leader, as far as this instance knows. */
  leader(): LeaderInfo | undefined {
    if (this.role === "leader") return { id: this.settings.id, address: this.address, ...(this.leaderSince ? { since: this.leaderSince } : {}) };
    return this.leaderInfo;
  }

  /** Compatibility problems found by the last check. */
  compatibility(): string[] {
    return this.member.current();
  }

  /** The error a follower answers task-changing calls with (CTS's redirect). */
  notLeaderError(): CtsError {
    const l = this.leader();
    if (!l)
      return new CtsError(
        "HA_NO_LEADER",
        "external",
        `this instance is not the leader, and no leader is elected right now (a failover takes up to twice the session TTL, ${durationText(this.settings.sessionTtlMs * 2)}). Retry in a few seconds, or ask GET /v1/status/cluster.`,
        { detail: { status: 503 } },
      );
    return new CtsError("HA_NOT_LEADER", "usage", `this instance is not the leader. Redirect the request to the leader: id=${l.id}, address=${l.address || "(not configured)"}`, {
      detail: { status: 400, leader_id: l.id, leader_address: l.address },
    });
  }

  /** Waits until the leader's queued state writes reached Consul; false on timeout or when not leading. */
  flush(timeoutMs = 5_000): Promise<boolean> {
    return this.writer.flush(timeoutMs);
  }

  /** After a task-changing API call on the leader: waits (up to 5 s) until the change is stored in Consul. */
  async flushForApi(): Promise<void> {
    if (this.role !== "leader") return;
    if (!(await this.writer.flush(5_000)) && this.role === "leader")
      this.log.warn("ha: a task change is not stored in Consul yet (still retrying); it is lost if this leader fails before the write succeeds");
  }

  /** Members, their health and the leader, read from Consul (any member answers the same). */
  clusterStatus(): Promise<ClusterStatus> {
    return buildClusterStatus(this.kv, this.settings);
  }

  // ---- life cycle ---------------------------------------------------------------------------

  /** Joins the cluster: mirrors the stored state, publishes the member record, competes for the lock. */
  async start(): Promise<void> {
    if (this.role !== "idle") return;
    const s = this.settings;
    // Another live instance with this id: refused before anything is joined (INSTANCE_ID_IN_USE).
    if (this.opts.answersAt) await checkIdentity(this.kv, s, this.address, this.opts.answersAt, this.log);
    if (this.role !== "idle") return;
    this.role = "follower";
    this.log.info(`ha: joining cluster '${s.clusterName}' as '${s.id}'`, { parent_path: s.parentPath, session_ttl: durationText(s.sessionTtlMs), lock_delay: durationText(s.lockDelayMs) });
    this.mirror.start();
    void this.member.check(true);
    const every = this.opts.compatIntervalMs ?? COMPAT_INTERVAL_MS;
    this.compatTimer = setInterval(() => void this.member.check(true), every);
    this.compatTimer.unref();
    this.election = this.electionLoop();
  }

  /**
   * Leaves gracefully: stops running tasks, stores what is pending, releases the lock (no lock
   * delay), ends the session. With `consulUnreachable` every step that needs Consul is skipped
   * (Consul lets the session expire after its TTL, and the others take over then); returns the
   * steps skipped.
   */
  async stop(opts: { consulUnreachable?: boolean; graceMs?: number } = {}): Promise<string[]> {
    if (this.role === "stopped") return [];
    const offline = opts.consulUnreachable === true;
    const skipped: string[] = [];
    const wasLeader = this.role === "leader";
    this.role = "stopped";
    if (wasLeader) this.opts.metrics?.leadership(false);
    this.stopping.abort();
    if (this.compatTimer) clearInterval(this.compatTimer);
    this.mirror.stop();
    if (wasLeader) {
      await this.controller.pause(opts.graceMs ?? this.stopGraceMs);
      if (!offline) await this.writer.flush(3_000);
      else if (this.writer.pendingCount > 0) skipped.push(`storing ${this.writer.pendingCount} pending state write(s) (events, holds) in Consul KV`);
    }
    this.writer.setSession(undefined);
    this.sessionAbort.abort();
    const session = this.session;
    this.session = undefined;
    if (session && offline) {
      session.abandon(false);
      if (wasLeader) skipped.push(`releasing the leader lock (Consul frees it when the session's TTL ${durationText(this.settings.sessionTtlMs)} runs out)`);
      skipped.push("destroying the HA session");
    } else if (session) {
      // Release first: a release has no lock delay, so a follower takes over at once.
      // Bounded: a stop with Consul unreachable still ends within CTS's 10 s.
      if (wasLeader) await this.kv.release(this.settings.lockKey, session.id, 2_000).catch((e) => this.log.warn(`ha: releasing the leader lock failed: ${messageOf(e)}`));
      await session.destroy(2_000);
    }
    if (offline) skipped.push("removing the member record");
    else await this.member.remove();
    if (this.election) await atMost(this.election, 3_000);
    if (wasLeader) this.log.info(offline ? "ha: stopped leading; the leader lock goes with the session's TTL (Consul is unreachable)" : "ha: released leadership (graceful stop)");
    return skipped;
  }

  // ---- election -----------------------------------------------------------------------------

  /** The role now (a method, so checks after an await are not narrowed away by the compiler). */
  private is(role: Role): boolean {
    return this.role === role;
  }

  /**
   * Holds a session (created again when Consul ends one) and, while it lives, follows the leader
   * lock with the one blocking-query loop: a free lock is tried for, a lost one steps down.
   */
  private async electionLoop(): Promise<void> {
    let failures = 0;
    while (this.role !== "stopped") {
      if (!this.session) {
        try {
          this.session = await LeaderSession.create(this.kv, this.settings, this.log, (loss) => this.onSessionLost(loss));
        } catch (err) {
          if (this.is("stopped")) return;
          this.electionFailed(err, ++failures);
          await pause(backoffDelay(joinBackoff(this.settings), failures), this.stopping.signal);
          continue;
        }
        if (this.is("stopped")) {
          await this.session.destroy();
          return;
        }
        failures = 0;
        this.sessionAbort = new AbortController();
      }
      const session = this.session;
      // Ends when the session is lost (onSessionLost) or the instance stops.
      await followBlockingQuery<KvRead<KvItem | undefined>>(
        {
          read: (index, signal) => this.kv.get(this.settings.lockKey, { index, signal }),
          answered: (read) => this.lockChanged(session, read.data),
          failed: (err, n) => {
            if (this.is("stopped")) return "stop";
            this.electionFailed(err, n);
            return undefined;
          },
        },
        this.sessionAbort.signal,
        HA_WATCH_TIMING,
      );
    }
  }

  /** The leader lock as Consul holds it now: follow the leader, step down, or try to take it. */
  private async lockChanged(session: LeaderSession, lock: KvItem | undefined): Promise<AfterAnswer> {
    const s = this.settings;
    const holder = lock?.session;
    const info = holder ? parseLeader(lock!.value) : undefined;
    if (info?.id !== this.leaderInfo?.id && this.role !== "leader") {
      this.leaderInfo = info;
      if (info) void this.member.check(false);
    } else this.leaderInfo = info;
    if (this.role === "leader") {
      if (holder !== session.id) this.stepDown("the leader lock is no longer held by this instance's session (it was deleted or released in Consul)");
      return;
    }
    if (holder || this.role !== "follower") return;
    this.log.info(`ha: attempting to acquire leadership lock: lock_path=${s.lockKey}`);
    const since = new Date().toISOString();
    const acquired = await this.kv.acquire(s.lockKey, session.id, JSON.stringify({ id: s.id, address: this.address, since }));
    if (acquired && this.session === session && session.alive && this.role === "follower") {
      this.leaderSince = since;
      await this.becomeLeader(session);
      return;
    }
    // Another instance won, or the lock delay of an invalidated session is still running: read afresh.
    return { restartAfterMs: Math.max(200, Math.min(1_000, s.lockDelayMs || 500)) };
  }

  /** A failed election step, logged at the first and every tenth attempt. */
  private electionFailed(err: unknown, failures: number): void {
    if (failures !== 1 && failures % 10 !== 0) return;
    if (err instanceof CtsError && err.category === "usage") this.log.error(`ha: cannot take part in the election: ${err.message}`);
    else this.log.warn(`ha: cannot take part in the election (attempt ${failures}): ${messageOf(err)}`);
  }

  private onSessionLost(loss: SessionLoss): void {
    const old = this.session;
    if (!old) return;
    this.session = undefined;
    this.sessionAbort.abort();
    old.abandon();
    if (this.role === "leader") this.stepDown(loss.message);
    else if (this.role === "follower") this.log.info(`ha: session ended (${loss.message}); a new one is created when Consul answers`);
  }

  private async becomeLeader(session: LeaderSession): Promise<void> {
    const s = this.settings;
    this.role = "leader";
    this.opts.metrics?.leadership(true);
    this.log.info(`ha: acquired leadership lock: id=${s.id}`, { lock_path: s.lockKey });
    this.mirror.stop();
    this.writer.setSession(session.id);
    try {
      if (this.resetPending) {
        // Fenced like every write: only the lock holder may clear the state.
        const ok = await this.kv.txn([
          { verb: "check-session", key: s.lockKey, session: session.id },
          { verb: "delete-tree", key: s.statePrefix },
        ]);
        if (ok) {
          this.resetPending = false;
          this.log.info(`ha: --reset-storage: cleared the stored task state under ${s.statePrefix}`);
        }
      }
      const read = await this.kv.list(s.statePrefix);
      if (this.role !== "leader" || this.session !== session) return;
      const state = parseState(s.statePrefix, read.data);
      this.lastState = state;
      for (const p of state.problems) this.log.warn(`ha: ignoring a stored entry that cannot be read: ${p}`);
      // What the previous leader applied replaces what this instance knew: a task with the same inputs is a no-op.
      for (const p of this.controller.restore(state, { applied: true })) this.log.error(`ha: ${p}`);
      void this.member.check(false);
      this.log.info(`ha: leading: running every task once (a task whose inputs equal what was applied last is a no-op), then watching`, { tasks: this.controller.taskNames().length });
      await this.controller.resume();
    } catch (err) {
      if (this.role !== "leader") return;
      // Leading without the stored state would silently undo API changes: give the lock back.
      this.log.error(`ha: could not read the stored state from Consul (${messageOf(err)}); releasing leadership to retry`);
      this.stepDown("the stored state could not be read");
      await this.kv.release(s.lockKey, session.id, 3_000).catch(() => undefined);
    }
  }

  /** Stops running tasks at once (runs in progress are cancelled) and becomes a follower. */
  private stepDown(reason: string): void {
    if (this.role !== "leader") return;
    this.role = "follower";
    this.opts.metrics?.leadership(false);
    this.leaderSince = undefined;
    this.writer.setSession(undefined);
    this.log.warn(`ha: lost leadership: ${reason}. Stopped running tasks; this instance is now a follower`);
    void this.controller.pause(this.stopGraceMs).then(() => {
      if (this.role === "follower") this.mirror.start();
    });
  }

  // ---- retries ------------------------------------------------------------------------------

  private explainRetry(notice: RetryNotice): void {
    if (this.role !== "leader" || notice.code !== TERRAFORM_STATE_LOCKED) return;
    this.log.warn(
      `ha: task '${notice.task}': its Terraform state is locked (most likely the previous leader's apply is still finishing or its lock has not expired); running it again in ${Math.round(notice.delayMs / 100) / 10} s`,
      { task: notice.task, attempt: notice.attempt },
    );
  }
}
