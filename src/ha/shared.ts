import { backoffDelay } from "../backoff.ts";
import type { LoadedConfig } from "../config/load.ts";
import { atMost, pause } from "../pause.ts";
import { messageOf } from "../errors.ts";
import type { Logger } from "../log.ts";
import type { HaControl } from "../runtime/interfaces.ts";
import type { ClusterStore, HaRuntime } from "./high-availability.ts";
import { checkIdentity, type AnswersAt } from "./identity.ts";
import type { HaKv } from "./kv.ts";
import { MemberReporter } from "./member.ts";
import { ClusterView } from "./membership.ts";
import { ownerRedirect, sharedClusterStatus, storePin, type SharedClusterStatus } from "./shared-api.ts";
import { StateMirror } from "./mirror.ts";
import { memoizedAssign } from "./rendezvous.ts";
import { LeaderSession, type SessionLoss } from "./session.ts";
import { durationText, joinBackoff, resolveHaSettings, type HaSettings } from "./settings.ts";
import { aliveKeyOf, ownerKeyOf } from "./shared-keys.ts";
import type { KvAccess } from "../state/kv-state.ts";
import { parseState, type StoredState } from "../state/stored-state.ts";
import type { StateWriter } from "./writer.ts";

/**
 * Shared mode: every healthy member runs a share of the tasks. Each member holds one session; with
 * it a liveness lock (`alive/<id>`) and one owner lock per task it runs (`tasks/<task>/owner`).
 * Owners follow rendezvous hashing over the healthy members (or a pin); a member runs a task only
 * while it holds that task's lock, and stops everything at once when its session may be lost.
 */
export class SharedCluster implements KvAccess {
  readonly settings: HaSettings;
  private readonly controller: HaControl;
  private readonly log: Logger;
  private readonly kv: HaKv;
  private readonly writer: StateWriter;
  private readonly view: ClusterView;
  private readonly mirror: StateMirror;
  private readonly member: MemberReporter;
  private readonly stopping = new AbortController();
  private session: LeaderSession | undefined;
  private sessionEnded: (() => void) | undefined;
  private localAddress = "";
  private lastState: StoredState | undefined;
  private loop: Promise<void> | undefined;
  private reconciling: Promise<void> | undefined;
  private dirty = false;
  private retryTimer: ReturnType<typeof setTimeout> | undefined;
  private settleTimer: ReturnType<typeof setTimeout> | undefined;
  private stopped = false;
  /** Set once the membership was first stable for `settleMs`: from then on every change applies at once. */
  private settled = false;
  private readonly assign = memoizedAssign();

  constructor(
    rt: HaRuntime,
    loaded: LoadedConfig,
    store: ClusterStore,
    private readonly opts: { stopGraceMs?: number; /** The identity check's probe (absent: no check at start). */ answersAt?: AnswersAt } = {},
  ) {
    this.settings = resolveHaSettings(loaded.config);
    this.controller = rt.controller;
    this.log = rt.log.child("ha");
    // On the process's one Consul client: renewals follow a rotated token file like every other call.
    this.kv = store.kv;
    this.writer = store.writer;
    this.view = new ClusterView(this.kv, this.settings, this.log, () => this.schedule());
    this.mirror = new StateMirror(this.kv, this.settings.statePrefix, this.controller, this.log, {
      applies: () => !this.stopped,
      onState: (state) => {
        this.lastState = state;
        this.schedule();
      },
      onApiTasksChanged: () => void this.member.check(false),
    });
    this.member = new MemberReporter(this.kv, this.settings, loaded, this.log, {
      address: () => this.address,
      otherLeader: () => undefined,
      apiTasks: () =>
        [...(this.lastState?.tasks.values() ?? [])].filter((t) => t.origin === "api" && t.spec && !t.deleted).map((t) => ({ name: t.name, class: "ModuleTask", module: t.spec!.module })),
      active: () => !this.stopped,
    });
    this.controller.shareTasks();
    // Nothing runs until this member holds a task's lock.
    void this.controller.pause(0);
  }

  /**
   * The task state's writes (src/state/kv-state.ts): what a run keeps is written by the task's
   * owner only, fenced with its owner lock; a task changed through this member's API that it does
   * not own (a new task nobody owns yet) is fenced with this member's liveness lock.
   */
  fence(task: string, what: "task" | "run"): string | null {
    if (this.controller.mine(task)) return this.ownerKey(task);
    return what === "task" ? this.aliveKey : null;
  }

  /** A task was created or deleted here: the assignments are computed again. */
  tasksChanged(): void {
    this.schedule();
  }

  // ---- what the API and CLI ask -------------------------------------------------------------

  /** The API's own URL, advertised when `instance.address` is not configured. */
  setLocalAddress(url: string): void {
    this.localAddress = url;
  }

  /** How clients reach this member. */
  get address(): string {
    return this.settings.instanceAddress ?? this.localAddress;
  }

  private get aliveKey(): string {
    return aliveKeyOf(this.settings);
  }

  private ownerKey(task: string): string {
    return ownerKeyOf(this.settings, task);
  }

  /** Task-changing calls on an existing task go to its owner (creating a task works anywhere). */
  beforeChange(change: { task?: string; action?: "approve" | "reject" | "drift" }): void {
    ownerRedirect(change.task, this.controller, this.view, this.settings, change.action);
  }

  /** After a task-changing API call: waits (up to 5 s) until the change is stored in Consul. */
  async flushForApi(): Promise<void> {
    if (!(await this.writer.flush(5_000))) this.log.warn("ha: a task change is not stored in Consul yet (still retrying)");
  }

  /** Pins a task to a member (null removes the pin); the owners move when the pin is seen. */
  pin(task: string, member: string | null): Promise<void> {
    return storePin(this.kv, this.settings, this.controller, this.log, task, member);
  }

  /** Members, their health and the tasks each one runs (read from Consul: any member answers alike). */
  clusterStatus(): Promise<SharedClusterStatus> {
    return sharedClusterStatus(this.kv, this.settings, this.controller);
  }

  // ---- life cycle ---------------------------------------------------------------------------

  /** Joins: follows the stored state and the membership, holds a session, takes its share. */
  async start(): Promise<void> {
    const s = this.settings;
    // Another live instance with this id: refused before anything is joined (INSTANCE_ID_IN_USE).
    if (this.opts.answersAt) await checkIdentity(this.kv, s, this.address, this.opts.answersAt, this.log);
    this.log.info(`ha: joining cluster '${s.clusterName}' as '${s.id}' (shared mode)`, { parent_path: s.parentPath, session_ttl: durationText(s.sessionTtlMs) });
    this.mirror.start();
    this.view.start();
    void this.member.check(true);
    this.loop = this.sessionLoop();
  }

  /** Leaves: stops its runs, stores what is pending, releases its locks (others take over at once), ends the session. */
  async stop(opts: { consulUnreachable?: boolean; graceMs?: number } = {}): Promise<string[]> {
    if (this.stopped) return [];
    const offline = opts.consulUnreachable === true;
    const skipped: string[] = [];
    this.stopped = true;
    this.stopping.abort();
    if (this.retryTimer) clearTimeout(this.retryTimer);
    if (this.settleTimer) clearTimeout(this.settleTimer);
    this.mirror.stop();
    this.view.stop();
    await this.reconciling?.catch(() => undefined);
    await this.controller.pause(opts.graceMs ?? this.opts.stopGraceMs ?? 10_000);
    if (!offline) await this.writer.flush(3_000);
    else if (this.writer.pendingCount > 0) skipped.push(`storing ${this.writer.pendingCount} pending state write(s) (events, holds) in Consul KV`);
    this.writer.setSession(undefined);
    const session = this.session;
    this.session = undefined;
    this.sessionEnded?.();
    if (session && offline) {
      // Consul frees the liveness and owner locks when the session's TTL runs out.
      session.abandon(false);
      skipped.push("destroying the session (releasing the liveness and task locks)");
    } else if (session) {
      // Destroying the session releases every lock it holds, so the others take over at once (lock delay is 0 unless configured).
      await session.destroy(2_000);
    }
    if (offline) skipped.push("removing the member record");
    else await this.member.remove();
    if (this.loop) await atMost(this.loop, 3_000);
    return skipped;
  }

  private async sessionLoop(): Promise<void> {
    const s = this.settings;
    let failures = 0;
    while (!this.stopped) {
      try {
        const session = await LeaderSession.create(this.kv, s, this.log, (loss) => this.onSessionLost(session, loss));
        if (this.stopped) return void (await session.destroy());
        const value = JSON.stringify({ id: s.id, address: this.address, since: new Date().toISOString() });
        if (!(await this.kv.acquire(this.aliveKey, session.id, value))) {
          // Another process with this id is alive (or a lock delay runs): never run tasks twice.
          await session.destroy();
          this.log.warn(`ha: the liveness lock '${this.aliveKey}' is held by another session (is another instance running with id '${s.id}'?); retrying`);
          await pause(Math.max(1_000, s.renewIntervalMs), this.stopping.signal);
          continue;
        }
        failures = 0;
        this.session = session;
        this.writer.setSession(session.id);
        await this.controller.resume();
        this.log.info(`ha: member '${s.id}' is live; taking its share of the tasks`);
        this.schedule();
        await new Promise<void>((resolve) => (this.sessionEnded = resolve));
      } catch (err) {
        if (this.stopped) return;
        failures++;
        if (failures === 1 || failures % 10 === 0) this.log.warn(`ha: cannot join the cluster (attempt ${failures}): ${messageOf(err)}`);
        await pause(backoffDelay(joinBackoff(s), failures), this.stopping.signal);
      }
    }
  }

  /** Self-fencing: Consul may give this member's locks away soon, so every run stops now. */
  private onSessionLost(session: LeaderSession, loss: SessionLoss): void {
    if (this.session !== session) return;
    this.session = undefined;
    this.writer.setSession(undefined);
    session.abandon();
    this.log.warn(`ha: lost the session: ${loss.message}. Stopped running every task; rejoining when Consul answers`);
    void this.controller.pause(this.opts.stopGraceMs ?? 10_000).finally(() => this.sessionEnded?.());
  }

  // ---- assignment ---------------------------------------------------------------------------

  /** Reconciles soon; calls never overlap (a change during a round triggers one more). */
  private schedule(): void {
    if (this.stopped) return;
    this.dirty = true;
    if (this.reconciling) return;
    this.reconciling = (async () => {
      while (this.dirty && !this.stopped) {
        this.dirty = false;
        try {
          await this.reconcile();
        } catch (err) {
          this.log.warn(`ha: assigning tasks failed: ${messageOf(err)}; retrying`);
          this.retrySoon();
        }
      }
    })().finally(() => (this.reconciling = undefined));
  }

  private retrySoon(): void {
    if (this.retryTimer || this.stopped) return;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      this.schedule();
    }, Math.max(250, Math.min(1_000, this.settings.renewRetryMs * 2)));
    this.retryTimer.unref();
  }

  private async reconcile(): Promise<void> {
    const session = this.session;
    if (!session || !session.alive) return;
    const id = this.settings.id;
    // Members started together join within seconds of each other: wait until the membership is
    // stable once, so the first runs happen where the tasks stay (no start-up moves). A member
    // joining a cluster that already runs tasks does not wait.
    if (!this.settled) {
      // Joining a cluster that already runs tasks: the others count this member now, so take at once.
      const left = this.view.othersOwn(id) ? 0 : this.settings.settleMs - this.view.stableFor();
      if (left > 0 || !this.view.healthyMembers().includes(id)) {
        if (this.settleTimer) clearTimeout(this.settleTimer);
        this.settleTimer = setTimeout(() => ((this.settleTimer = undefined), this.schedule()), Math.max(100, left));
        this.settleTimer.unref();
        return;
      }
      this.settled = true;
      this.log.info(`ha: membership stable (${this.view.healthyMembers().length} member(s)); taking this member's share`);
    }
    const tasks = this.controller.taskNames();
    const want = this.assign(tasks, this.view.healthyMembers(), this.view.pins());
    // Give away first: the new owner is waiting for exactly these locks.
    const leaving = this.controller.ownedNames().filter((t) => want.get(t) !== id);
    await Promise.all(
      leaving.map(async (task) => {
        await this.controller.disown(task, this.opts.stopGraceMs ?? 10_000);
        // A run that outlives its cancellation keeps the lock: the new owner must not start beside it.
        while (this.controller.view(task)?.running && this.session === session && !this.stopped) await pause(250, this.stopping.signal);
      }),
    );
    if (leaving.length) await this.writer.flush(3_000);
    for (const task of leaving) {
      if (this.session !== session) return;
      if (this.controller.view(task)) await this.kv.release(this.ownerKey(task), session.id).catch((e) => this.log.warn(`ha: releasing task '${task}' failed: ${messageOf(e)}`));
      else await this.kv.delete(this.ownerKey(task)).catch(() => undefined);
      this.log.info(`ha: released task '${task}' (its owner is now ${want.get(task) ?? "nobody"})`, { task });
    }
    let fresh = false;
    let waiting = false;
    for (const task of tasks) {
      if (want.get(task) !== id || this.controller.mine(task)) continue;
      const holder = this.view.ownerOf(task);
      if (holder && holder.id !== id) {
        waiting = true; // the lock's release wakes the task-locks query
        continue;
      }
      const value = JSON.stringify({ id, address: this.address, since: new Date().toISOString() });
      if (!(await this.kv.acquire(this.ownerKey(task), session.id, value))) {
        waiting = true;
        continue;
      }
      if (this.session !== session || !session.alive) return;
      // The previous owner's last writes are in Consul now: start from them.
      if (!fresh) fresh = await this.refreshState();
      this.controller.own(task);
      this.log.info(`ha: acquired task '${task}'`, { task });
    }
    if (waiting) this.retrySoon();
  }

  /** Reads the stored state once and applies it to the tasks this member does not own. */
  private async refreshState(): Promise<boolean> {
    try {
      const read = await this.kv.list(this.settings.statePrefix);
      const state = parseState(this.settings.statePrefix, read.data);
      this.lastState = state;
      for (const p of this.controller.restore(state)) this.log.debug(`ha: ${p}`);
      return true;
    } catch (err) {
      this.log.warn(`ha: reading the stored state failed: ${messageOf(err)}; using the last one seen`);
      return false;
    }
  }
}
