import { rm } from "node:fs/promises";
import { CtsError, messageOf } from "../errors/cts-error.ts";
import { atMost } from "../time/pause.ts";
import { findCycle } from "../task/chains.ts";
import type { Logger } from "../log/logger.ts";
import type { ModuleTaskSpec } from "../synth/task-ref.ts";
import type { EventStore } from "./events.ts";
import type { RunOutcome, TaskChange } from "./interfaces.ts";
import type { TaskRunner } from "./run.ts";
import type { TaskRuns } from "./runs.ts";
import { moduleEntry, type TaskEntry } from "./task-entry.ts";
import type { TaskRegistry } from "./tasks.ts";
import type { Triggers } from "./triggers.ts";

/** What changing tasks at run time needs from the controller. */
export interface TaskChangeDeps {
  tasks: TaskRegistry;
  triggers: Triggers;
  runs: TaskRuns;
  events: EventStore;
  log: Logger;
  /** Where a task works and its warm provider processes (run.ts). */
  runner: TaskRunner;
  /** Starts the task's triggers if this instance watches it now (watching, enabled, owned). */
  rewatch(e: TaskEntry): void;
  /** Keeps the change in the task state (a cluster stores it in Consul). */
  changed(change: TaskChange): void;
  /** Whether this instance runs the task (shared mode: owns it). */
  mine(name: string): boolean;
}

/**
 * Module tasks created, replaced, dry-run and deleted through the API: each waits until the task
 * is not running, keeps registry, triggers and working dir in step, and reports the change.
 */
export class TaskChanges {
  constructor(private readonly d: TaskChangeDeps) {}

  /** Enables or disables a task; enabling runs it (unless `run: false`: the caller runs it itself). */
  async setEnabled(name: string, enabled: boolean, opts: { run?: boolean }): Promise<void> {
    const { tasks, triggers, runs } = this.d;
    const e = tasks.get(name);
    if (e.enabled === enabled) return;
    e.enabled = enabled;
    if (enabled) {
      this.d.rewatch(e);
      if (opts.run !== false && this.d.mine(name)) runs.enqueue(name, "task-change");
    } else {
      triggers.stop(e);
      runs.drop(name);
    }
    this.d.changed({ kind: enabled ? "enabled" : "disabled", task: name, origin: e.origin });
  }

  /** Adds a module task (from the API); validates it first. */
  add(spec: ModuleTaskSpec): void {
    this.checkUpstream(spec.name, spec.after);
    const e = this.d.tasks.create(spec);
    this.d.rewatch(e);
    this.d.changed({ kind: "created", task: spec.name, origin: "api" });
  }

  /** Swaps an API task's spec once it is not running and re-watches it. Queues no run: the caller decides. */
  async replace(name: string, spec: ModuleTaskSpec): Promise<void> {
    const { tasks, triggers, runs } = this.d;
    const next = tasks.replacement(name, spec);
    const e = tasks.get(name);
    triggers.stop(e);
    runs.drop(name);
    await runs.queue.settled(name);
    // Task chains: the API checked the new `after`, but another change may have landed while this
    // one waited; a circle would leave its tasks waiting for each other for good.
    const cycle = findCycle(tasks.all().map((t) => ({ name: t.name, after: t === e ? next.task.after : t.task.after })));
    if (cycle) {
      this.d.rewatch(e);
      throw new CtsError("TASK_INVALID", "usage", `cts_after makes a circle of tasks: ${cycle.join(" → ")}. A chain must end: remove one of these names from a \`cts_after\`.`, { task: name, detail: { status: 400 } });
    }
    // Or a task it now runs after was deleted (or is being deleted) while this change waited.
    try {
      this.checkUpstream(name, next.task.after);
    } catch (err) {
      this.d.rewatch(e);
      throw err;
    }
    tasks.swap(e, next);
    this.d.rewatch(e);
    this.d.changed({ kind: "replaced", task: name, origin: "api" });
  }

  /** Plans a module task that is not kept (POST /v1/tasks?run=inspect); removes its working dir after. */
  async dryRun(spec: ModuleTaskSpec): Promise<RunOutcome> {
    const outcome = await this.d.runs.execute(moduleEntry(spec, true), "plan");
    // PATCH ?run=inspect plans a kept task's new spec in its own dir: that dir stays.
    if (!this.d.tasks.find(spec.name)) await this.removeDir(spec.name);
    return outcome;
  }

  /** Deletes a task once it is not running; with `destroy`, destroys its infrastructure first. */
  async delete(name: string, opts: { destroy?: boolean } = {}): Promise<RunOutcome | undefined> {
    const { tasks, triggers, runs } = this.d;
    const e = tasks.get(name);
    e.deleting = true;
    triggers.stop(e);
    runs.drop(name);
    await runs.queue.settled(name);
    let outcome: RunOutcome | undefined;
    if (opts.destroy) {
      outcome = await runs.execute(e, "destroy");
      if (!outcome.ok) {
        e.deleting = false;
        this.d.rewatch(e);
        throw outcome.error ?? new CtsError("TERRAFORM_FAILED", "external", "destroy failed", { task: name });
      }
    }
    tasks.remove(name);
    this.d.events.delete(name);
    // A held plan goes with its task (and its stored copy with it).
    await this.d.runner.dropHold(name, undefined);
    this.d.changed({ kind: "deleted", task: name, origin: e.origin });
    this.d.runner.state.forget(name);
    await this.removeDir(name);
    return outcome;
  }

  /** Shared mode, a task this instance now owns: forget the applied hash (the previous owner may have applied since), watch it, run it once. */
  takeOver(name: string): void {
    const e = this.d.tasks.find(name);
    if (!e || e.deleting || !e.enabled) return;
    this.d.runner.state.forgetAppliedKey(name);
    this.d.triggers.start(e);
    this.d.runs.enqueue(name, "task-change");
  }

  /** Shared mode, a task moving away: stop its triggers, cancel its run, wait (up to `graceMs`) until it is not running. */
  async handOver(name: string, graceMs: number): Promise<void> {
    const e = this.d.tasks.find(name);
    if (!e) return;
    this.d.triggers.stop(e);
    this.d.runs.drop(name);
    this.d.runs.cancel(name);
    await atMost(this.d.runs.queue.settled(name), graceMs);
  }

  /**
   * A task may not start to run after one that is being deleted or is gone: the delete checked
   * that nothing runs after it when it began, and its outputs go with it (409, the name and the fix).
   */
  private checkUpstream(name: string, after: readonly string[] | undefined): void {
    for (const [i, up] of (after ?? []).entries()) {
      const e = this.d.tasks.find(up);
      if (e && !e.deleting) continue;
      const what = e ? "is being deleted" : "was deleted while this change waited for the task's run to end";
      throw new CtsError(
        "TASK_INVALID",
        "usage",
        `cts_after[${i}] names task '${up}', which ${what}: a task cannot run after it. Remove '${up}' from cts_after, or create '${up}' again (once its delete has ended) and then this task.`,
        { task: name, detail: { status: 409 } },
      );
    }
  }

  /** Ends the task's warm providers and removes its working dir (a deleted or inspect-only task). */
  private async removeDir(name: string): Promise<void> {
    const { log } = this.d;
    await this.d.runner.coolDown(name).catch((err) => log.warn(`task '${name}': stopping its warm provider processes: ${messageOf(err)}`, { task: name }));
    try {
      await rm(this.d.runner.taskDir(name), { recursive: true, force: true });
    } catch (err) {
      log.warn(`task '${name}': could not remove its working dir: ${messageOf(err)}`, { task: name });
    }
  }
}
