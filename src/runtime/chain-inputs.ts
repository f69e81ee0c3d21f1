import type { AnyTaskInput } from "../task/task.ts";
import type { ChainRuns, ChainSnapshot } from "./chains.ts";
import type { TaskEntry } from "./task-entry.ts";
import type { TaskInputSource } from "./task-input.ts";

/**
 * Task chains on one snapshot (CTS #329): the first run of a chain reads its own input and, in the
 * same moment, what every task after it would read; the chain's later runs get that data instead
 * of reading again. A catalog change during the upstream apply therefore never reaches a downstream
 * run next to outputs made from older data. A downstream task whose own data changed meanwhile runs
 * once more right after, with the newer data (runs.ts, `again`).
 */
export class ChainInputs implements TaskInputSource {
  constructor(
    private readonly inner: TaskInputSource,
    private readonly chains: ChainRuns,
    /** The entry of a task by name (undefined once deleted). */
    private readonly entryOf: (name: string) => TaskEntry | undefined,
  ) {}

  async inputOf(e: TaskEntry, signal: AbortSignal): Promise<AnyTaskInput> {
    const downstream = this.chains.downstreamOf(e.name);
    const pinned = this.chains.pinnedFor(e.name);
    const kept = pinned?.inputs.get(e.name);
    if (pinned && kept) {
      const now = this.inner.versionsOf?.(e);
      const then = pinned.versions.get(e.name);
      if (now && then && now.join("\n") !== then.join("\n")) this.chains.newerData(e.name);
      if (downstream.length) this.chains.took(e.name, pinned);
      return { ...kept };
    }
    if (!downstream.length) return this.inner.inputOf(e, signal);
    const { input, versions } = await this.read(e, signal);
    this.chains.took(e.name, await this.snapshot(e, input, versions, downstream, signal));
    return { ...input };
  }

  versionsOf(e: TaskEntry): string[] | undefined {
    return this.inner.versionsOf?.(e);
  }

  /** A task's input and the keys of exactly that data (read together: a source that answered late cannot make them differ). */
  private read(e: TaskEntry, signal: AbortSignal): Promise<{ input: AnyTaskInput; versions: string[] | undefined }> {
    if (this.inner.inputWithVersions) return this.inner.inputWithVersions(e, signal);
    return this.inner.inputOf(e, signal).then((input) => ({ input, versions: undefined }));
  }

  /** What the tasks after `e` read now, beside `e`'s own input. A task whose data cannot be read here reads its own when it runs. */
  private async snapshot(e: TaskEntry, input: AnyTaskInput, own: string[] | undefined, downstream: readonly string[], signal: AbortSignal): Promise<ChainSnapshot> {
    const inputs = new Map<string, AnyTaskInput>([[e.name, input]]);
    const versions = new Map<string, readonly string[] | undefined>([[e.name, own]]);
    for (const name of downstream) {
      const d = this.entryOf(name);
      // A disabled task does not run: nothing to read for it.
      if (!d?.enabled) continue;
      try {
        const read = await this.read(d, signal);
        versions.set(name, read.versions);
        inputs.set(name, read.input);
      } catch {
        // Its own run reads it again and reports what is wrong, as the task's own error.
      }
    }
    return { inputs, versions };
  }
}
