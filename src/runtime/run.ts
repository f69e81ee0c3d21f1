import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { CtsError } from "../errors.ts";
import type { LoadedConfig } from "../config/load.ts";
import type { Logger } from "../log.ts";
import type { Metrics } from "../metrics/metrics.ts";
import type { Driver, TaskWorkspace } from "../driver/types.ts";
import type { SynthResult } from "../synth/synthesize.ts";
import type { Synthesizer } from "../synth/synthesizer.ts";
import { APPLIED_HASH_FILE } from "../synth/paths.ts";
import { secretEnv } from "../task/secrets.ts";
import type { AnyTaskInput } from "../task/task.ts";
import type { RunOutcome } from "./interfaces.ts";
import type { TaskEntry } from "./task-entry.ts";
import { driftSettings } from "./drift.ts";
import type { TaskInputSource } from "./task-input.ts";

/** What a run does with Terraform. */
export type RunMode = "apply" | "plan" | "destroy";

/** The driver as a run uses it (src/driver/types.ts): the operations, where each task works, cooling down. */
export type RunDriver = Pick<Driver, "apply" | "plan" | "destroy" | "taskDir" | "coolDown">;

/** A module task's provider values and `task_env` (CTS passes them through the environment only). */
function taskEnvironment(e: TaskEntry): Record<string, string> {
  const t = e.task as { environment?: () => Record<string, string> };
  return typeof t.environment === "function" ? t.environment() : {};
}

/** What one attempt needs. */
export interface RunDeps {
  loaded: LoadedConfig;
  driver: RunDriver;
  synthesizer: Synthesizer;
  inputs: TaskInputSource;
  log: Logger;
  metrics?: Metrics;
}

type Prepared = { synth: SynthResult; ws: TaskWorkspace; count: number | undefined };

/** How many instances (services) or catalog services the condition's data holds; undefined for other conditions. */
function conditionCount(e: TaskEntry, input: AnyTaskInput): number | undefined {
  const kind = e.task.condition.kind;
  if (kind === "services") return input.services?.length;
  if (kind === "catalog-services") return input.catalogServices ? Object.keys(input.catalogServices).length : undefined;
  return undefined;
}

/**
 * The last hop of a run: one attempt reads the task's input (task-input.ts), synthesizes it
 * (src/synth/synthesizer.ts), skips when the JSON equals the last applied one, and hands the JSON
 * to the Terraform driver (src/terraform/). Throws what failed; retries and events are the
 * caller's (runs.ts). It also owns what runs belong to: the task's working dir, the warm
 * providers, the synthesizer's worker.
 *
 * The applied hash (the no-op skip) is voided before an apply, in memory and on disk, and written
 * only after it succeeded: an apply that failed, was cancelled or was cut short by a crash may
 * have changed part of the infrastructure, so the next run must apply even if its JSON is the same.
 */
export class TaskRunner {
  constructor(private readonly deps: RunDeps) {}

  /** One attempt at a run: apply (skipped when nothing changed), plan or destroy. */
  async attempt(e: TaskEntry, mode: RunMode, signal: AbortSignal): Promise<RunOutcome> {
    const { synth, ws, count } = await this.prepare(e, signal);
    if (mode === "apply") this.checkEmpty(e, count);
    // CTS applies a scheduled task on every tick, whatever its data: the infrastructure may have drifted.
    if (mode === "apply" && e.task.condition.kind !== "schedule" && synth.hash === e.lastAppliedHash) {
      e.lastAppliedCount = count;
      return { task: e.name, ok: true, outcome: "no-op", synth };
    }
    const { driver } = this.deps;
    const onOutput = this.outputLog(e);
    if (mode === "plan") {
      const result = await driver.plan(ws, { signal, onOutput });
      return { task: e.name, ok: true, outcome: "planned", result, synth };
    }
    if (mode === "destroy") {
      this.voidAppliedHash(e);
      const result = await driver.destroy(ws, { signal, onOutput });
      return { task: e.name, ok: true, outcome: "destroyed", result, synth };
    }
    return this.apply(e, synth, ws, signal, count);
  }

  /**
   * One drift check: plans (refresh on) the task's JSON when it equals the last applied one; changes
   * present then mean the infrastructure was changed out of band. With `driftCheck.correct`, applies it again.
   */
  async checkDrift(e: TaskEntry, signal: AbortSignal): Promise<RunOutcome> {
    const { correct } = driftSettings(this.deps.loaded.config.driftCheck, e.task.driftCheck);
    const at = () => new Date().toISOString();
    if (!e.lastAppliedHash) return { task: e.name, ok: true, outcome: "not-applied", drift: { state: "not-applied", checkedAt: at() } };
    const { synth, ws, count } = await this.prepare(e, signal);
    if (synth.hash !== e.lastAppliedHash) return { task: e.name, ok: true, outcome: "inputs-changed", synth, drift: { state: "inputs-changed", checkedAt: at() } };
    const plan = await this.deps.driver.plan(ws, { signal, onOutput: this.outputLog(e) });
    if (!plan.changesPresent) return { task: e.name, ok: true, outcome: "in-sync", result: plan, synth, drift: { state: "in-sync", checkedAt: at() } };
    if (!correct) return { task: e.name, ok: true, outcome: "drift", result: plan, synth, drift: { state: "drifted", checkedAt: at(), changes: plan.summary } };
    const applied = await this.apply(e, synth, ws, signal, count);
    return { ...applied, outcome: "drift", result: plan, drift: { state: "corrected", checkedAt: at(), changes: plan.summary, applied: applied.result!.summary } };
  }

  /** Where a task works (removed with the task). */
  taskDir(task: string): string {
    return this.deps.driver.taskDir(task);
  }

  /** Ends warm provider processes: of one task, or all of them when this instance stops running tasks. */
  async coolDown(task?: string): Promise<void> {
    await this.deps.driver.coolDown?.(task);
  }

  /** Closes what runs belong to (the synthesizer's worker). */
  close(): Promise<void> {
    return this.deps.synthesizer.close();
  }

  private async prepare(e: TaskEntry, signal: AbortSignal): Promise<Prepared> {
    const { loaded, driver, synthesizer } = this.deps;
    const input = await this.deps.inputs.inputOf(e, signal);
    const synthStarted = performance.now();
    const synth = await synthesizer.synth(e.ref, input, {
      backend: loaded.config.driver?.terraform?.backend,
      configDir: loaded.dir,
      taskDir: driver.taskDir(e.name),
      providerVersions: loaded.config.driver?.terraform?.providerVersions,
    });
    this.deps.metrics?.phase(e.name, "synthesize", (performance.now() - synthStarted) / 1000);
    // Stopped (pause, stop, delete) while reading or synthesizing: Terraform is not started at all.
    if (signal.aborted) throw new CtsError("TERRAFORM_CANCELLED", "external", "was cancelled before Terraform started; nothing was changed.", { task: e.name });
    // Secrets are read at every run (rotation needs no restart) and reach Terraform only as TF_VAR_ env.
    return { synth, count: conditionCount(e, input), ws: { task: e.name, json: synth.json, env: { ...taskEnvironment(e), ...secretEnv(e.name, e.task.secrets) } } };
  }

  private outputLog(e: TaskEntry): (line: string) => void {
    return (line) => this.deps.log.debug(`[${e.name}] ${line}`, { task: e.name });
  }

  private voidAppliedHash(e: TaskEntry): void {
    e.lastAppliedHash = undefined;
    // Synchronous: a tiny local file, and a thread-pool round trip costs more CPU than the call.
    rmSync(join(this.deps.driver.taskDir(e.name), APPLIED_HASH_FILE), { force: true });
  }

  /**
   * A condition that held instances at the last apply and holds none now: applied only when the
   * task allows empty data (the default, as CTS), and logged either way. A drop is not an error
   * of Consul's (a filtered or denied read fails before this): it is what Consul says now.
   */
  private checkEmpty(e: TaskEntry, count: number | undefined): void {
    const before = e.lastAppliedCount;
    if (count !== 0 || before === undefined || before === 0) return;
    const what = e.task.condition.kind === "services" ? "instances" : "catalog services";
    if (e.task.allowEmpty === false) {
      throw new CtsError(
        "TASK_EMPTY_REFUSED",
        "usage",
        `its condition dropped from ${before} ${what} to none, and the task does not allow empty data (allowEmpty: false); nothing was applied. If the empty data is right, set allowEmpty: true (CTS HCL: cts_allow_empty = true); otherwise restore the ${what} in Consul.`,
        { task: e.name, detail: { before } },
      );
    }
    this.deps.log.warn(`task '${e.name}': its condition dropped from ${before} ${what} to none; applying the empty data (allowEmpty, the default; set allowEmpty: false to refuse)`, { task: e.name });
  }

  private async apply(e: TaskEntry, synth: SynthResult, ws: TaskWorkspace, signal: AbortSignal, count?: number): Promise<RunOutcome> {
    this.voidAppliedHash(e);
    const result = await this.deps.driver.apply(ws, { signal, onOutput: this.outputLog(e) });
    e.lastAppliedHash = synth.hash;
    e.lastAppliedCount = count;
    // Best effort: a missing file only costs one apply that could have been skipped.
    try {
      writeFileSync(join(this.deps.driver.taskDir(e.name), APPLIED_HASH_FILE), synth.hash + "\n", { mode: 0o640 });
    } catch {
      /* kept in memory; the next start applies once more */
    }
    return { task: e.name, ok: true, outcome: "applied", result, synth };
  }
}
