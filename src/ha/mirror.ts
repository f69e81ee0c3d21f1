import { pause } from "../pause.ts";
import { messageOf } from "../errors.ts";
import type { Logger } from "../log.ts";
import type { HaControl } from "../runtime/interfaces.ts";
import type { HaKv } from "./kv.ts";
import { parseState, taskFingerprint, type StoredState } from "./state.ts";

/**
 * A follower keeps its paused controller equal to the stored state (one blocking query on the
 * state prefix), so its read API calls answer what the leader's would.
 */
export class StateMirror {
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
  ) {}

  /** Starts mirroring (no-op when running). */
  start(): void {
    if (this.abort) return;
    const ac = new AbortController();
    this.abort = ac;
    void this.loop(ac.signal);
  }

  /** Stops mirroring. */
  stop(): void {
    this.abort?.abort();
    this.abort = undefined;
  }

  private async loop(signal: AbortSignal): Promise<void> {
    try {
      await this.follow(signal);
    } finally {
      if (this.abort?.signal === signal) this.abort = undefined;
    }
  }

  private async follow(signal: AbortSignal): Promise<void> {
    let index = 0n;
    let failures = 0;
    while (!signal.aborted) {
      try {
        const read = await this.kv.list(this.prefix, { index, signal });
        if (signal.aborted || !this.hooks.applies()) return;
        if (read.index === index) continue;
        index = read.index < index ? 0n : read.index;
        failures = 0;
        const state = parseState(this.prefix, read.data);
        // The controller first, then the listeners: shared mode reassigns tasks from the
        // controller's task list as soon as it hears of a new state.
        for (const problem of this.controller.restore(state.tasks.values(), state.events)) this.log.debug(`ha: mirror: ${problem}`);
        this.hooks.onState(state);
        const fingerprint = [...state.tasks.values()].filter((t) => t.origin === "api").map(taskFingerprint).sort().join("\n");
        if (fingerprint !== this.apiTasks) {
          this.apiTasks = fingerprint;
          this.hooks.onApiTasksChanged();
        }
      } catch (err) {
        if (signal.aborted) return;
        failures++;
        index = 0n;
        if (failures === 1 || failures % 10 === 0) this.log.warn(`ha: reading the stored state failed (attempt ${failures}): ${messageOf(err)}`);
        await pause(Math.min(5_000, 250 * 2 ** Math.min(failures, 5)), signal);
      }
    }
  }
}
