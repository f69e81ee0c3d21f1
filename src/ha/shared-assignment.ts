import { unrefTimer } from "../time/clock.ts";
import { messageOf } from "../errors/cts-error.ts";
import { pause } from "../time/pause.ts";
import type { ClusterStatus } from "./cluster.ts";
import type { ApiChange, ClusterMode, Leaving, MemberParts } from "./cluster-mode.ts";
import { ClusterView } from "./membership.ts";
import { memoizedAssign } from "./rendezvous.ts";
import type { LeaderSession, SessionLoss } from "./session.ts";
import { durationText } from "./settings.ts";
import { ownerRedirect, sharedClusterStatus, storePin } from "./shared-api.ts";
import { aliveKeyOf, ownerKeyOf } from "./shared-keys.ts";

/**
 * Shared assignment (`mode: "shared"`): every healthy member runs a share of the tasks. With its
 * session a member holds a liveness lock (`alive/<id>`) and one owner lock per task it runs
 * (`tasks/<task>/owner`). Owners follow rendezvous hashing over the healthy members (or a pin); a
 * member runs a task only while it holds that task's lock, and stops everything at once when its
 * session may be lost.
 */
export class SharedAssignment implements ClusterMode {
  private readonly view: ClusterView;
  private reconciling: Promise<void> | undefined;
  private dirty = false;
  private retryTimer: unknown;
  private settleTimer: unknown;
  /** Set once the membership was first stable for `settleMs`: from then on every change applies at once. */
  private settled = false;
  private readonly assign = memoizedAssign();

  constructor(private readonly m: MemberParts) {
    this.view = new ClusterView(m.kv, m.settings, m.log, () => this.schedule(), m.clock);
    m.controller.shareTasks();
  }

  /**
   * The task state's writes (src/state/kv-state.ts): what a run keeps is written by the task's
   * owner only, fenced with its owner lock; a task changed through this member's API that it does
   * not own (a new task nobody owns yet) is fenced with this member's liveness lock.
   */
  fence(task: string, what: "task" | "run"): string | null {
    if (this.m.controller.mine(task)) return this.ownerKey(task);
    return what === "task" ? this.aliveKey : null;
  }

  /** A task was created or deleted here: the assignments are computed again. */
  tasksChanged(): void {
    this.schedule();
  }

  private get aliveKey(): string {
    return aliveKeyOf(this.m.settings);
  }

  private ownerKey(task: string): string {
    return ownerKeyOf(this.m.settings, task);
  }

  // ---- what the API asks --------------------------------------------------------------------

  /** Task-changing calls on an existing task go to its owner (creating a task works anywhere). */
  beforeChange(change: ApiChange): void {
    ownerRedirect(change.task, this.m.controller, this.view, this.m.settings, change.action);
  }

  /** After a task-changing API call: waits (up to 5 s) until the change is stored in Consul. */
  async flushForApi(): Promise<void> {
    if (!(await this.m.writer.flush(5_000))) this.m.log.warn("ha: a task change is not stored in Consul yet (still retrying)");
  }

  /** Pins a task to a member (null removes the pin); the owners move when the pin is seen. */
  pin(task: string, member: string | null): Promise<void> {
    return storePin(this.m.kv, this.m.settings, this.m.controller, this.m.log, task, member);
  }

  /** Members, their health and the tasks each one runs (read from Consul: any member answers alike). */
  clusterStatus(): Promise<ClusterStatus> {
    return sharedClusterStatus(this.m.kv, this.m.settings, this.m.controller);
  }

  // ---- taking part --------------------------------------------------------------------------

  join(): void {
    const s = this.m.settings;
    this.m.log.info(`ha: joining cluster '${s.clusterName}' as '${s.id}' (shared mode)`, { parent_path: s.parentPath, session_ttl: durationText(s.sessionTtlMs) });
    this.view.start();
  }

  /** Takes the liveness lock with the new session: another process with this id alive (or a lock delay running) must never run tasks twice. */
  async admit(session: LeaderSession): Promise<boolean> {
    const s = this.m.settings;
    const value = JSON.stringify({ id: s.id, address: this.m.address(), since: new Date(this.m.clock.wallNow()).toISOString() });
    if (await this.m.kv.acquire(this.aliveKey, session.id, value)) return true;
    this.m.log.warn(`ha: the liveness lock '${this.aliveKey}' is held by another session (is another instance running with id '${s.id}'?); retrying`);
    return false;
  }

  /** Live: writes are fenced with this session, and the member takes its share until the session ends. */
  async hold(session: LeaderSession, ended: AbortSignal): Promise<void> {
    this.m.writer.setSession(session.id);
    await this.m.controller.resume();
    this.m.log.info(`ha: member '${this.m.settings.id}' is live; taking its share of the tasks`);
    this.schedule();
    if (!ended.aborted) await new Promise<void>((resolve) => ended.addEventListener("abort", () => resolve(), { once: true }));
  }

  /** Self-fencing: Consul may give this member's locks away soon, so every run stops now; the member rejoins once they have. */
  sessionLost(loss: SessionLoss): Promise<void> {
    this.m.log.warn(`ha: lost the session: ${loss.message}. Stopped running every task; rejoining when Consul answers`);
    return this.m.controller.pause(this.m.stopGraceMs);
  }

  joinFailed(err: unknown, failures: number): void {
    if (failures === 1 || failures % 10 === 0) this.m.log.warn(`ha: cannot join the cluster (attempt ${failures}): ${messageOf(err)}`);
  }

  /** Every member mirrors the stored state: it answers reads for the tasks others run. */
  mirrorApplies(): boolean {
    return !this.m.stopping.aborted;
  }

  /** A new stored state may have new tasks or pins: assign again. */
  stateRead(): void {
    this.schedule();
  }

  otherLeader(): undefined {
    return undefined;
  }

  async leave(): Promise<Leaving> {
    this.m.clock.clearTimeout(this.retryTimer);
    this.m.clock.clearTimeout(this.settleTimer);
    this.view.stop();
    await this.reconciling?.catch(() => undefined);
    // Consul frees the liveness and owner locks when the session's TTL runs out.
    return { ranTasks: true, offlineSkips: ["destroying the session (releasing the liveness and task locks)"] };
  }

  // ---- assignment ---------------------------------------------------------------------------

  /** Reconciles soon; calls never overlap (a change during a round triggers one more). */
  private schedule(): void {
    if (this.m.stopping.aborted) return;
    this.dirty = true;
    if (this.reconciling) return;
    this.reconciling = (async () => {
      while (this.dirty && !this.m.stopping.aborted) {
        this.dirty = false;
        try {
          await this.reconcile();
        } catch (err) {
          this.m.log.warn(`ha: assigning tasks failed: ${messageOf(err)}; retrying`);
          this.retrySoon();
        }
      }
    })().finally(() => (this.reconciling = undefined));
  }

  private retrySoon(): void {
    if (this.retryTimer !== undefined || this.m.stopping.aborted) return;
    this.retryTimer = this.m.clock.setTimeout(
      () => {
        this.retryTimer = undefined;
        this.schedule();
      },
      Math.max(250, Math.min(1_000, this.m.settings.renewRetryMs * 2)),
    );
    unrefTimer(this.retryTimer);
  }

  private async reconcile(): Promise<void> {
    const { settings: s, controller, kv, log } = this.m;
    const session = this.m.session();
    if (!session || !session.alive) return;
    const id = s.id;
    // Members started together join within seconds of each other: wait until the membership is
    // stable once, so the first runs happen where the tasks stay (no start-up moves). A member
    // joining a cluster that already runs tasks does not wait.
    if (!this.settled) {
      // Joining a cluster that already runs tasks: the others count this member now, so take at once.
      const left = this.view.othersOwn(id) ? 0 : s.settleMs - this.view.stableFor();
      if (left > 0 || !this.view.healthyMembers().includes(id)) {
        this.m.clock.clearTimeout(this.settleTimer);
        this.settleTimer = this.m.clock.setTimeout(() => ((this.settleTimer = undefined), this.schedule()), Math.max(100, left));
        unrefTimer(this.settleTimer);
        return;
      }
      this.settled = true;
      log.info(`ha: membership stable (${this.view.healthyMembers().length} member(s)); taking this member's share`);
    }
    const tasks = controller.taskNames();
    // Task chains run on one member: a chain's tasks share the owner of the chain (runtime/chains.ts).
    const want = this.assign(tasks, this.view.healthyMembers(), this.view.pins(), (t) => controller.chainOf?.(t) ?? t);
    // Give away first: the new owner is waiting for exactly these locks.
    const leaving = controller.ownedNames().filter((t) => want.get(t) !== id);
    await Promise.all(
      leaving.map(async (task) => {
        await controller.disown(task, this.m.stopGraceMs);
        // A run that outlives its cancellation keeps the lock: the new owner must not start beside it.
        while (controller.view(task)?.running && this.m.session() === session && !this.m.stopping.aborted) await pause(250, this.m.stopping, this.m.clock);
      }),
    );
    if (leaving.length) await this.m.writer.flush(3_000);
    for (const task of leaving) {
      if (this.m.session() !== session) return;
      if (controller.view(task)) await kv.release(this.ownerKey(task), session.id).catch((e) => log.warn(`ha: releasing task '${task}' failed: ${messageOf(e)}`));
      else await kv.delete(this.ownerKey(task)).catch(() => undefined);
      log.info(`ha: released task '${task}' (its owner is now ${want.get(task) ?? "nobody"})`, { task });
    }
    let fresh = false;
    let waiting = false;
    // Task chains: a chain's tasks are taken whole, and started in one turn once all their locks
    // are held, so a downstream run sees its upstream task's run wanted and waits for it (taken one
    // lock at a time, it would run first on outputs from before). A task outside a chain is its own group.
    const groups = new Map<string, string[]>();
    for (const task of tasks) {
      if (want.get(task) !== id || controller.mine(task)) continue;
      const group = controller.chainOf?.(task) ?? task;
      groups.set(group, [...(groups.get(group) ?? []), task]);
    }
    for (const group of groups.values()) {
      // A lock held elsewhere: its release wakes the task-locks query.
      const elsewhere = group.some((task) => {
        const holder = this.view.ownerOf(task);
        return holder !== undefined && holder.id !== id;
      });
      if (elsewhere) {
        waiting = true;
        continue;
      }
      const taken: string[] = [];
      for (const task of group) {
        const value = JSON.stringify({ id, address: this.m.address(), since: new Date(this.m.clock.wallNow()).toISOString() });
        if (!(await kv.acquire(this.ownerKey(task), session.id, value))) break;
        taken.push(task);
      }
      if (this.m.session() !== session || !session.alive) return;
      if (taken.length < group.length) {
        waiting = true;
        // Part of a chain was taken elsewhere meanwhile: give back what was taken, take it whole later.
        for (const task of taken) await kv.release(this.ownerKey(task), session.id).catch((e) => log.warn(`ha: releasing task '${task}' failed: ${messageOf(e)}`));
        continue;
      }
      // The previous owner's last writes are in Consul now: start from them.
      if (!fresh) fresh = await this.refreshState();
      if (this.m.session() !== session || !session.alive) return;
      for (const task of group) {
        controller.own(task);
        log.info(`ha: acquired task '${task}'`, { task });
      }
    }
    if (waiting) this.retrySoon();
  }

  /** Reads the stored state once and applies it to the tasks this member does not own. */
  private async refreshState(): Promise<boolean> {
    try {
      const state = await this.m.readState();
      for (const p of this.m.controller.restore(state)) this.m.log.debug(`ha: ${p}`);
      return true;
    } catch (err) {
      this.m.log.warn(`ha: reading the stored state failed: ${messageOf(err)}; using the last one seen`);
      return false;
    }
  }
}
