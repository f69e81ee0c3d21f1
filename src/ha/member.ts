import { systemClock, type Clock } from "../time/clock.ts";
import type { LoadedConfig } from "../config/load.ts";
import { messageOf } from "../errors/cts-error.ts";
import type { Logger } from "../log/logger.ts";
import { compatProblems, type MemberTask } from "./compat.ts";
import type { HaKv } from "./kv.ts";
import type { HaSettings } from "./settings.ts";

/** A member record under `<parentPath>/members/<id>`: what the cluster status shows of an instance. */
export interface MemberRecord {
  id: string;
  address: string;
  /** The tasks of its config file (a follower compares its own against the leader's). */
  config_tasks: MemberTask[];
  /** Compatibility problems of this instance (empty: it can run every task). */
  compat: string[];
  checked_at: string;
}

/** What the check reads from the running instance. */
export interface MemberSources {
  address: () => string;
  /** The leader's id, when another instance leads. */
  otherLeader: () => string | undefined;
  /** Tasks created through the API, from the stored state. */
  apiTasks: () => MemberTask[];
  /** False once the instance stopped: nothing is written then. */
  active: () => boolean;
}

/**
 * The compatibility check and this instance's member record: logs (as `ha.compat`) every task it
 * could not run if it led, and publishes the result for the cluster status.
 */
export class MemberReporter {
  private problems: string[] = [];
  private running: Promise<void> | undefined;
  private readonly compatLog: Logger;

  constructor(
    private readonly kv: HaKv,
    private readonly settings: HaSettings,
    private readonly loaded: LoadedConfig,
    private readonly log: Logger,
    private readonly sources: MemberSources,
    /** The record's `checked_at` reads its wall time. */
    private readonly clock: Clock = systemClock,
  ) {
    this.compatLog = log.child("compat");
  }

  /** The problems the last check found. */
  current(): string[] {
    return [...this.problems];
  }

  /** The tasks of this instance's config. */
  ownTasks(): MemberTask[] {
    return this.loaded.config.tasks.map((t) => {
      const module = (t as { module?: unknown }).module;
      return { name: t.name, class: t.constructor.name, ...(typeof module === "string" ? { module } : {}) };
    });
  }

  /** Runs the check (one at a time) and writes the record. `full` logs every problem, else only new ones. */
  check(full: boolean): Promise<void> {
    const next = (this.running ?? Promise.resolve()).then(() => this.run(full)).catch((e) => this.log.warn(`ha: compatibility check failed to run: ${messageOf(e)}`));
    this.running = next;
    return next;
  }

  /** Removes the record (graceful stop; `active()` is false by then, so no check writes it again). */
  async remove(): Promise<void> {
    await this.kv.delete(this.key(), false, 2_000).catch(() => undefined);
  }

  private key(): string {
    return `${this.settings.membersPrefix}${this.settings.id}`;
  }

  private async leaderTasks(id: string): Promise<MemberTask[] | undefined> {
    const rec = await this.kv.get(`${this.settings.membersPrefix}${id}`).catch(() => undefined);
    try {
      const m = rec?.data ? (JSON.parse(rec.data.value) as MemberRecord) : undefined;
      return m && Array.isArray(m.config_tasks) ? m.config_tasks : undefined;
    } catch {
      return undefined; // an unreadable record compares as absent
    }
  }

  private async run(full: boolean): Promise<void> {
    if (!this.sources.active()) return;
    const s = this.settings;
    const leaderId = this.sources.otherLeader();
    const tasks = leaderId && leaderId !== s.id ? await this.leaderTasks(leaderId) : undefined;
    const problems = await compatProblems({
      configDir: this.loaded.dir,
      ownTasks: this.ownTasks(),
      apiTasks: this.sources.apiTasks(),
      ...(leaderId && tasks ? { leader: { id: leaderId, tasks } } : {}),
    });
    const before = new Set(this.problems);
    for (const p of problems) if (full || !before.has(p)) this.compatLog.error(`compatibility check failure: ${p}`, { id: s.id });
    if (problems.length === 0 && before.size > 0) this.compatLog.info("compatibility check passed: this instance can run every task again", { id: s.id });
    this.problems = problems;
    const record: MemberRecord = { id: s.id, address: this.sources.address(), config_tasks: this.ownTasks(), compat: problems, checked_at: new Date(this.clock.wallNow()).toISOString() };
    if (this.sources.active()) await this.kv.put(this.key(), JSON.stringify(record)).catch((e) => this.log.debug(`ha: writing the member record failed: ${messageOf(e)}`));
  }
}
