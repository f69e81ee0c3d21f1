import type { CtsError } from "../errors/cts-error.ts";
import type { AnyTaskInput } from "../task/task.ts";
import { allSources, fieldOf } from "../task/sources.ts";
import type { CatalogReader, Source } from "../consul/types.ts";
import { taskFilterError } from "../task/filter-error.ts";
import type { SkippedServices } from "./skipped-services.ts";
import type { TaskEntry } from "./task-entry.ts";
import type { WatchedData } from "./watched-data.ts";

/** Where a run's input comes from: one interface, whether the task is watched or read once. */
export interface TaskInputSource {
  /** The task's input as of now, one field per source (services, catalogServices, kv). */
  inputOf(e: TaskEntry, signal: AbortSignal): Promise<AnyTaskInput>;
  /**
   * The change keys of what a watched task's subscriptions hold now, one per source (undefined for
   * a task that is not watched): a run given data read earlier (task chains) compares them.
   */
  versionsOf?(e: TaskEntry): string[] | undefined;
  /**
   * The task's input with the change keys of the data it holds, read together (undefined keys for
   * a task that is not watched): what a chain's snapshot keeps.
   */
  inputWithVersions?(e: TaskEntry, signal: AbortSignal): Promise<{ input: AnyTaskInput; versions: string[] | undefined }>;
}

/**
 * Watched tasks take the data their subscriptions hold (the latest blocking-query answer); tasks
 * that are not watched (once, inspect, dry runs, a paused instance) read Consul once per run.
 */
export class TaskInputReader implements TaskInputSource {
  constructor(
    private readonly reader: CatalogReader,
    private readonly skipped: SkippedServices,
    /** The subscriptions of watched tasks (the triggers keep them). */
    private readonly watched?: WatchedData,
  ) {}

  /** The task's input as of now, one field per source (services, catalogServices, kv). */
  async inputOf(e: TaskEntry, signal: AbortSignal): Promise<AnyTaskInput> {
    return (await this.inputWithVersions(e, signal)).input;
  }

  async inputWithVersions(e: TaskEntry, signal: AbortSignal): Promise<{ input: AnyTaskInput; versions: string[] | undefined }> {
    const input: Record<string, unknown> = {};
    const subs = this.watched?.of(e.name) ?? [];
    // A filter Consul refuses is the task's configuration error: it names the task and where the filter is written.
    const asTaskError = (source: Source) => (err: unknown) => Promise.reject(taskFilterError(e.name, source, err, configFilesOf(e)));
    if (subs.length > 0) {
      for (const s of subs) await s.sub.ready.catch(asTaskError(s.source));
      // Every source has data: each one's data and its key are read in one synchronous pass.
      for (const s of subs) input[s.field] = s.sub.current();
      return { input: input as AnyTaskInput, versions: this.versionsOf(e) };
    }
    const onSkipped = (service: string, error: CtsError) => this.skipped.report(e.name, service, error);
    for (const source of allSources(e.task)) input[fieldOf(source)] = await this.reader.read(source, signal, onSkipped).catch(asTaskError(source));
    return { input: input as AnyTaskInput, versions: undefined };
  }

  versionsOf(e: TaskEntry): string[] | undefined {
    const subs = this.watched?.of(e.name) ?? [];
    if (subs.length === 0) return undefined;
    return subs.map((s) => s.sub.version?.() ?? "");
  }
}

/** The files a task's options are written in, as far as cts knows: the config (or CTS config files); none for an API task. */
export function configFilesOf(e: TaskEntry): string[] {
  return e.ref.kind === "config" ? [...(e.ref.configFiles ?? [e.ref.configFile])] : [];
}
