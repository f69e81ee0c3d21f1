import { backoffDelay } from "../time/backoff.ts";
import { every, systemClock, type Clock } from "../time/clock.ts";
import type { LoadedConfig } from "../config/load.ts";
import type { ConsulClient } from "../consul/client.ts";
import { CtsError } from "../errors/cts-error.ts";
import type { Logger } from "../log/logger.ts";
import { atMost, pause } from "../time/pause.ts";
import type { HaControl } from "../runtime/interfaces.ts";
import type { KvAccess } from "../state/kv-state.ts";
import { parseState, type StoredState } from "../state/stored-state.ts";
import type { ClusterStatus } from "./cluster.ts";
import type { ApiChange, ClusterMode, MemberParts } from "./cluster-mode.ts";
import { checkIdentity, type AnswersAt } from "./identity.ts";
import type { HaKv } from "./kv.ts";
import { MemberReporter } from "./member.ts";
import { StateMirror } from "./mirror.ts";
import { LeaderSession, type SessionLoss } from "./session.ts";
import { COMPAT_INTERVAL_MS, durationText, joinBackoff, resolveHaSettings, UNAVAILABLE_RETRY_MS, type HaSettings } from "./settings.ts";
import { isUnavailable } from "../consul/reachability.ts";
import type { StateWriter } from "./writer.ts";

/** How long before Consul may give a lost session's locks away its runs' Terraform must be gone (the kill and its landing). */
const FENCE_MARGIN_MS = 1_000;

/** The cluster's Consul KV and its fenced state writer (made by the composition root, which hands the writer to the task state too). */
export interface ClusterStore {
  kv: HaKv;
  writer: StateWriter;
}

/** What a cluster member needs from the runtime (a subset of Runtime). */
export interface HaRuntime {
  controller: HaControl;
  /** The process's one Consul client (the cluster does not close it: the runtime does). */
  consul: ConsulClient;
  log: Logger;
}

/** Options for tests and the daemon. */
export interface ClusterMemberOptions {
  /** How long runs that are stopped (a stop, a lost session, a task moving away) may take to end (default 10 s). */
  stopGraceMs?: number;
  /** The identity check's probe: does anything answer at a member's address (absent: no check at start). */
  answersAt?: AnswersAt;
  /** Every timer and wait of the cluster (default: the real clock). */
  clock?: Clock;
  /** Period of the compatibility check, in both modes (default 5 minutes). */
  compatIntervalMs?: number;
}

/**
 * One instance in a cluster: it holds a Consul session (made again when Consul ends one), mirrors
 * the stored state, publishes its member record and stops gracefully; its mode (leader election,
 * shared assignment) says what the session is for and which state writes this instance may make.
 * docs/clustering.md explains both.
 */
export class ClusterMember implements KvAccess {
  readonly settings: HaSettings;
  /** The member's strategy: leader election or shared assignment. */
  readonly mode: ClusterMode;
  private readonly controller: HaControl;
  private readonly log: Logger;
  private readonly kv: HaKv;
  private readonly writer: StateWriter;
  private readonly clock: Clock;
  private readonly mirror: StateMirror;
  private readonly record: MemberReporter;
  private readonly stopGraceMs: number;
  /** Ends every wait when the member stops, so the process exits at once. */
  private readonly stopping = new AbortController();
  private session: LeaderSession | undefined;
  /** Aborted when the session ends (lost, or the stop). */
  private sessionEnd = new AbortController();
  /** What the mode does about a lost session; the next session waits for it. */
  private afterLoss: Promise<void> = Promise.resolve();
  private localAddress = "";
  private lastState: StoredState | undefined;
  private loop: Promise<void> | undefined;
  private started = false;
  private stopped = false;
  /** Ends the repeating compatibility check. */
  private stopCompat: (() => void) | undefined;

  constructor(rt: HaRuntime, loaded: LoadedConfig, store: ClusterStore, mode: (parts: MemberParts) => ClusterMode, private readonly opts: ClusterMemberOptions = {}) {
    if (!loaded.config.highAvailability) throw new CtsError("CTS_INTERNAL", "internal", "a cluster member needs highAvailability in the config");
    this.settings = resolveHaSettings(loaded.config);
    this.controller = rt.controller;
    this.log = rt.log.child("ha");
    // On the process's one Consul client: renewals follow a rotated token file like every other call.
    this.kv = store.kv;
    this.writer = store.writer;
    this.clock = opts.clock ?? systemClock;
    this.stopGraceMs = opts.stopGraceMs ?? 10_000;
    this.mirror = new StateMirror(
      this.kv,
      this.settings.statePrefix,
      this.controller,
      this.log,
      {
        applies: () => this.mode.mirrorApplies(),
        onState: (state) => {
          this.lastState = state;
          this.mode.stateRead?.(state);
        },
        onApiTasksChanged: () => void this.record.check(false),
      },
      this.clock,
    );
    this.record = new MemberReporter(
      this.kv,
      this.settings,
      loaded,
      this.log,
      {
        address: () => this.address,
        otherLeader: () => this.mode.otherLeader(),
        apiTasks: () =>
          [...(this.lastState?.tasks.values() ?? [])].filter((t) => t.origin === "api" && t.spec && !t.deleted).map((t) => ({ name: t.name, class: "ModuleTask", module: t.spec!.module })),
        active: () => !this.stopped,
      },
      this.clock,
    );
    this.mode = mode(this.parts());
    // Nothing runs until the mode says so (leading, or holding a task's lock); API calls meanwhile are redirected.
    void this.controller.pause(0);
  }

  /** The parts the mode works with. */
  private parts(): MemberParts {
    return {
      settings: this.settings,
      controller: this.controller,
      log: this.log,
      kv: this.kv,
      writer: this.writer,
      clock: this.clock,
      mirror: this.mirror,
      record: this.record,
      stopGraceMs: this.stopGraceMs,
      stopping: this.stopping.signal,
      address: () => this.address,
      session: () => this.session,
      readState: () => this.readState(),
    };
  }

  /** The task state's writes (src/state/kv-state.ts): the mode says which lock fences them, or that this member must not write. */
  fence(task: string, what: "task" | "run"): string | undefined | null {
    return this.mode.fence(task, what);
  }

  /** A task was created or deleted here: the mode may have to reassign tasks. */
  tasksChanged(): void {
    this.mode.tasksChanged?.();
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

  /** Compatibility problems found by the last check. */
  compatibility(): string[] {
    return this.record.current();
  }

  /** Refuses a task-changing call this instance must not make: the redirect to the leader, or to the task's owner. */
  beforeChange(change: ApiChange): void {
    this.mode.beforeChange(change);
  }

  /** After a task-changing API call: waits (up to 5 s) until the change is stored in Consul. */
  flushForApi(): Promise<void> {
    return this.mode.flushForApi();
  }

  /** Members, their health, and the leader or who runs which task, read from Consul (any member answers the same). */
  clusterStatus(): Promise<ClusterStatus> {
    return this.mode.clusterStatus();
  }

  // ---- life cycle ---------------------------------------------------------------------------

  /** Joins the cluster: mirrors the stored state, publishes the member record, holds a session for its mode. */
  async start(): Promise<void> {
    if (this.started || this.stopped) return;
    this.started = true;
    // Another live instance with this id: refused before anything is joined (INSTANCE_ID_IN_USE).
    if (this.opts.answersAt) await checkIdentity(this.kv, this.settings, this.address, this.opts.answersAt, this.log);
    if (this.stopped) return;
    this.mode.join();
    this.mirror.start();
    void this.record.check(true);
    // Every member, whatever its mode, checks again every 5 minutes (docs/clustering.md).
    this.stopCompat = every(this.clock, this.opts.compatIntervalMs ?? COMPAT_INTERVAL_MS, () => void this.record.check(true));
    this.loop = this.joinLoop();
  }

  /**
   * Leaves gracefully: stops running tasks, stores what is pending, releases the locks (others take
   * over at once), ends the session, removes the member record. With `consulUnreachable` every step
   * that needs Consul is skipped (Consul lets the session expire after its TTL, and the others take
   * over then); returns the steps skipped.
   */
  async stop(opts: { consulUnreachable?: boolean; graceMs?: number } = {}): Promise<string[]> {
    if (this.stopped) return [];
    this.stopped = true;
    const offline = opts.consulUnreachable === true;
    const skipped: string[] = [];
    this.stopping.abort();
    this.stopCompat?.();
    this.mirror.stop();
    const leaving = await this.mode.leave();
    if (leaving.ranTasks) {
      await this.controller.pause(opts.graceMs ?? this.stopGraceMs);
      if (!offline) await this.writer.flush(3_000);
      else if (this.writer.pendingCount > 0) skipped.push(`storing ${this.writer.pendingCount} pending state write(s) (events, holds) in Consul KV`);
    }
    this.writer.setSession(undefined);
    this.sessionEnd.abort();
    const session = this.session;
    this.session = undefined;
    if (session && offline) {
      session.abandon(false);
      skipped.push(...leaving.offlineSkips);
    } else if (session) {
      await leaving.beforeDestroy?.(session);
      // Destroying the session releases every lock it holds: the others take over at once (lock delay is 0 unless configured).
      // Bounded: a stop with Consul unreachable still ends within CTS's 10 s.
      await session.destroy(2_000);
    }
    if (offline) skipped.push("removing the member record");
    else await this.record.remove();
    if (this.loop) await atMost(this.loop, 3_000, this.clock);
    leaving.done?.(offline);
    return skipped;
  }

  // ---- the session --------------------------------------------------------------------------

  /** Holds a session (made again when Consul ends one) and lends it to the mode while it lives. */
  private async joinLoop(): Promise<void> {
    let failures = 0;
    while (!this.stopped) {
      let session: LeaderSession | undefined;
      try {
        const made = await LeaderSession.create(this.kv, this.settings, this.log, (loss) => this.sessionLost(made, loss), this.clock);
        session = made;
        if (this.stopped) return void (await made.destroy());
        if (this.mode.admit && !(await this.mode.admit(made))) {
          await made.destroy();
          await pause(Math.max(1_000, this.settings.renewIntervalMs), this.stopping.signal, this.clock);
          continue;
        }
        // Stopped while the mode took the session up: the stop has already ended the one it knew.
        if (this.stopped) return void (await made.destroy());
        failures = 0;
        this.session = made;
        this.sessionEnd = new AbortController();
        await this.mode.hold(made, this.sessionEnd.signal);
        await this.afterLoss;
      } catch (err) {
        if (this.stopped) return;
        // A session the mode could not take up renews no more (and is destroyed once Consul answers).
        if (session?.alive && session !== this.session) session.abandon();
        this.mode.joinFailed(err, ++failures);
        // Consul unreachable or without a leader: tried again within a second, so a session is made as soon as quorum returns.
        const backoff = joinBackoff(this.settings);
        await pause(backoffDelay(isUnavailable(err) ? { ...backoff, maxMs: Math.min(backoff.maxMs, UNAVAILABLE_RETRY_MS) } : backoff, failures), this.stopping.signal, this.clock);
      }
    }
  }

  /** Consul ended the session, or no renewal succeeded for a TTL (self-fencing): the mode stops what it fenced. */
  private sessionLost(session: LeaderSession, loss: SessionLoss): void {
    if (this.session !== session) return;
    this.fenceRuns(session, loss);
    this.session = undefined;
    this.writer.setSession(undefined);
    this.sessionEnd.abort();
    session.abandon();
    this.afterLoss = Promise.resolve(this.mode.sessionLost(loss)).catch(() => undefined);
  }

  /**
   * Before anything else: every run started under the lost session is cancelled, its Terraform to
   * be gone before Consul may give the lock away (less a second for the kill to land). Past that
   * time (this process was paused or starved longer than Consul keeps a session: a SIGSTOP, a VM
   * or host stall) Terraform is killed at once: a graceful stop would let it finish what it is doing
   * and save state while another instance may already apply the same workspace.
   */
  private fenceRuns(session: LeaderSession, loss: SessionLoss): void {
    // An invalidated session's locks are free once the lock delay has run.
    const expiresIn = session.lockMayGoInMs() - FENCE_MARGIN_MS;
    const killWithin = loss.kind === "invalidated" ? Math.min(expiresIn, this.settings.lockDelayMs - FENCE_MARGIN_MS) : expiresIn;
    const cancelled = this.controller.fence(killWithin);
    if (cancelled === 0 || killWithin > 0) return;
    if (expiresIn > 0) {
      this.log.error(`ha: ${loss.message}: ${cancelled} run(s) in progress killed at once (its locks are free for another instance now); what they were changing may be half done: the next run plans with refresh`, { runs: cancelled });
      return;
    }
    this.log.error(
      `ha: this instance was stalled for ${durationText(Math.round(session.sinceRenewal()))} since its last session renewal, longer than Consul keeps the session (2 × TTL ${durationText(this.settings.sessionTtlMs)}${this.settings.lockDelayMs ? ` + lock delay ${durationText(this.settings.lockDelayMs)}` : ""}): ${cancelled} run(s) in progress killed at once (${loss.message}). Another instance may have taken over; what those runs were changing may be half done: its next run plans with refresh and reports what Terraform could not save`,
      { stalled_ms: Math.round(session.sinceRenewal()), runs: cancelled },
    );
  }

  /** One read of the stored state. */
  private async readState(): Promise<StoredState> {
    const read = await this.kv.list(this.settings.statePrefix);
    const state = parseState(this.settings.statePrefix, read.data);
    this.lastState = state;
    return state;
  }
}
