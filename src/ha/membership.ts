import { systemClock, type Clock } from "../time/clock.ts";
import { followBlockingQuery } from "../consul/blocking-query.ts";
import { messageOf } from "../errors/cts-error.ts";
import type { Logger } from "../log/logger.ts";
import { CTS_SERVICE_NAME, clusterTag } from "./cluster.ts";
import type { HaKv, KvRead } from "./kv.ts";
import { HA_WATCH_TIMING, type HaSettings } from "./settings.ts";

/** One live member: its liveness lock is held by a session. */
export interface LiveMember {
  id: string;
  address: string;
}

/** Who holds a task's owner lock, as the lock's value names it. */
export interface TaskOwner {
  id: string;
  address: string;
}

/**
 * What a shared-mode member knows of the cluster, each part followed with a blocking query:
 * the liveness locks under `alive/` (a killed member drops out when Consul expires its session),
 * the health of the cluster's self-registrations, and the owner locks and pins under `tasks/`.
 */
export class ClusterView {
  private alive = new Map<string, LiveMember>();
  /** Registered members: whether every check passes. */
  private health = new Map<string, boolean>();
  private owners = new Map<string, TaskOwner>();
  private pinned = new Map<string, string>();
  private readonly abort = new AbortController();
  private membersText = "";
  /** When the healthy member set last changed (the clock's ms). */
  private changedAt: number;

  constructor(
    private readonly kv: HaKv,
    private readonly settings: HaSettings,
    private readonly log: Logger,
    private readonly changed: () => void,
    /** How long the membership has been stable, and the queries' pacing and backoff. */
    private readonly clock: Clock = systemClock,
  ) {
    this.changedAt = clock.now();
  }

  /** Starts the three blocking queries. */
  start(): void {
    const s = this.settings;
    this.follow("liveness locks", (index, signal) => this.kv.list(s.alivePrefix, { index, signal }), (items) => {
      const alive = new Map<string, LiveMember>();
      for (const it of items) {
        if (!it.session) continue;
        const v = parse(it.value);
        const id = it.key.slice(s.alivePrefix.length);
        if (v?.id === id) alive.set(id, { id, address: v.address });
      }
      this.alive = alive;
    });
    this.follow("member health", (index, signal) => this.kv.healthServiceAt(CTS_SERVICE_NAME, clusterTag(s.clusterName), { index, signal }), (regs) => {
      // A check that has not run yet (critical, no output) does not count against a member: its
      // liveness lock already proves it started, and the first check runs up to 10 s later.
      this.health = new Map(regs.map((r) => [r.Service.ID, (r.Checks ?? []).every((c) => c.Status === "passing" || (c.Status === "critical" && !c.Output))]));
    });
    this.follow("task locks", (index, signal) => this.kv.list(s.tasksPrefix, { index, signal }), (items) => {
      const owners = new Map<string, TaskOwner>();
      const pinned = new Map<string, string>();
      for (const it of items) {
        const rest = it.key.slice(s.tasksPrefix.length);
        const slash = rest.lastIndexOf("/");
        if (slash <= 0) continue;
        const [task, leaf] = [rest.slice(0, slash), rest.slice(slash + 1)];
        if (leaf === "owner" && it.session) {
          const v = parse(it.value);
          if (v) owners.set(task, v);
        } else if (leaf === "pin" && /^[A-Za-z0-9_.-]{1,128}$/.test(it.value)) pinned.set(task, it.value);
      }
      this.owners = owners;
      this.pinned = pinned;
    });
  }

  /** Stops the queries. */
  stop(): void {
    this.abort.abort();
  }

  /**
   * The members tasks are assigned to, sorted: a held liveness lock, and a self-registration whose
   * checks pass (a member without a registration counts on its lock alone).
   */
  healthyMembers(): string[] {
    return [...this.alive.keys()].filter((id) => this.health.get(id) !== false).sort();
  }

  /** Milliseconds since the healthy member set last changed. */
  stableFor(): number {
    return this.clock.now() - this.changedAt;
  }

  /** Live members with their addresses. */
  liveMembers(): LiveMember[] {
    return [...this.alive.values()];
  }

  /** Whether a registered member's checks pass (undefined: not registered). */
  healthOf(id: string): boolean | undefined {
    return this.health.get(id);
  }

  /** Who holds the task's owner lock now. */
  ownerOf(task: string): TaskOwner | undefined {
    return this.owners.get(task);
  }

  /** Whether another member holds any owner lock (the cluster is already running tasks). */
  othersOwn(self: string): boolean {
    for (const o of this.owners.values()) if (o.id !== self) return true;
    return false;
  }

  /** Task → member pins. */
  pins(): ReadonlyMap<string, string> {
    return this.pinned;
  }

  /** Follows one blocking query with the one blocking-query loop; each new answer is applied, then told. */
  private follow<T>(what: string, read: (index: bigint, signal: AbortSignal) => Promise<KvRead<T>>, apply: (data: T) => void): void {
    void followBlockingQuery<KvRead<T>>(
      {
        read,
        answered: (r) => {
          apply(r.data);
          const text = this.healthyMembers().join(",");
          if (text !== this.membersText) {
            this.membersText = text;
            this.changedAt = this.clock.now();
          }
          this.changed();
        },
        failed: (err, failures) => {
          if (failures === 1 || failures % 10 === 0) this.log.warn(`ha: watching the cluster's ${what} failed (attempt ${failures}): ${messageOf(err)}`);
          return undefined;
        },
      },
      this.abort.signal,
      HA_WATCH_TIMING,
      Math.random,
      this.clock,
    );
  }
}

function parse(value: string): { id: string; address: string } | undefined {
  try {
    const v = JSON.parse(value) as { id?: unknown; address?: unknown };
    return typeof v.id === "string" ? { id: v.id, address: typeof v.address === "string" ? v.address : "" } : undefined;
  } catch {
    return undefined;
  }
}
