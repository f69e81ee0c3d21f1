import { systemClock, type Clock } from "../time/clock.ts";
import { followBlockingQuery, type AfterFailure, type BlockingQuery } from "../consul/blocking-query.ts";
import { messageOf } from "../errors/cts-error.ts";
import type { Logger } from "../log/logger.ts";
import type { HaControl } from "../runtime/interfaces.ts";
import type { HaKv, KvItem, KvRead } from "./kv.ts";
import { HA_WATCH_TIMING } from "./settings.ts";
import { parseState, taskFingerprint, type StoredState } from "../state/stored-state.ts";

/**
 * A follower keeps its paused controller equal to the stored state (one blocking query on the
 * state prefix, followed by the one blocking-query loop), so its read API calls answer what the
 * leader's would.
 */
export class StateMirror implements BlockingQuery<KvRead<KvItem[]>> {
  private abort: AbortController | undefined;
  private apiTasks = "";

  constructor(
    private readonly kv: HaKv,
    private readonly prefix: string,
    private readonly controller: HaControl,
    private readonly log: Logger,
    private readonly hooks: {
      /** Whether a read may still be applied (a paused follower, or a shared-mode member). */
      applies: () => boolean;
      /** Every state read (the compatibility check wants the API tasks). */
      onState: (state: StoredState) => void;
      /** The set of API tasks changed. */
      onApiTasksChanged: () => void;
    },
    /** The blocking query's pacing and backoff wait on it. */
    private readonly clock: Clock = systemClock,
  ) {}

  /** Starts mirroring (no-op when running). */
  start(): void {
    if (this.abort) return;
    const ac = new AbortController();
    this.abort = ac;
    void followBlockingQuery(this, ac.signal, HA_WATCH_TIMING, Math.random, this.clock).finally(() => {
      if (this.abort === ac) this.abort = undefined;
    });
  }

  /** Stops mirroring. */
  stop(): void {
    this.abort?.abort();
    this.abort = undefined;
  }

  /** One read of the state prefix (the loop's owner). */
  read(index: bigint, signal: AbortSignal): Promise<KvRead<KvItem[]>> {
    return this.kv.list(this.prefix, { index, signal });
  }

  /** A new stored state: applied to the controller, then told to the listeners. */
  answered(read: KvRead<KvItem[]>): void {
    if (!this.hooks.applies()) return this.stop();
    const state = parseState(this.prefix, read.data);
    // The controller first, then the listeners: shared mode reassigns tasks from the
    // controller's task list as soon as it hears of a new state.
    for (const problem of this.controller.restore(state)) this.log.debug(`ha: mirror: ${problem}`);
    this.hooks.onState(state);
    const fingerprint = [...state.tasks.values()].filter((t) => t.origin === "api").map(taskFingerprint).sort().join("\n");
    if (fingerprint !== this.apiTasks) {
      this.apiTasks = fingerprint;
      this.hooks.onApiTasksChanged();
    }
  }

  /** A failed read: logged at the first and every tenth; the loop backs off and retries. */
  failed(err: unknown, failures: number): AfterFailure {
    if (failures === 1 || failures % 10 === 0) this.log.warn(`ha: reading the stored state failed (attempt ${failures}): ${messageOf(err)}`);
    return undefined;
  }
}
