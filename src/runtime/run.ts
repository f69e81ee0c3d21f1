import { CtsError } from "../errors/cts-error.ts";
import { effectiveGuards, type GuardSettings } from "../task/guards.ts";
import { Holds, type HeldPlan } from "./holds.ts";
import { knownSecrets } from "../secrets/redactor.ts";
import type { LoadedConfig } from "../config/load.ts";
import type { Logger } from "../log/logger.ts";
import type { Metrics } from "../metrics/metrics.ts";
import type { Driver, RunResult, TaskWorkspace } from "../driver/types.ts";
import type { SynthResult } from "../synth/synthesize.ts";
import type { Synthesizer } from "../synth/synthesizer.ts";
import { secretEnv } from "../task/secrets.ts";
import { taskTemplateDependencies, TemplateRenderError, type TemplateDependency, type TemplateLookup } from "../task/provider-templates.ts";
import type { AnyTaskInput } from "../task/task.ts";
import type { RunOutcome } from "./interfaces.ts";
import type { TaskState } from "../state/task-state.ts";
import { memoryTaskState } from "../state/memory-state.ts";
import type { TerraformStates } from "../state/terraform-states.ts";
import type { TaskEntry } from "./task-entry.ts";
import { driftSettings } from "./drift.ts";
import { UnsavedStates } from "./unsaved-state.ts";
import { historyRetention } from "./history.ts";
import type { RunRetention } from "../state/records.ts";
import type { TaskInputSource } from "./task-input.ts";
import { upstreamOutputs } from "./chains.ts";
import { tracePhase } from "../trace/tracing.ts";
import { GuardedApply } from "./guarded-apply.ts";

/** What a run does with Terraform. */
export type RunMode = "apply" | "plan" | "destroy";

/** The driver as a run uses it (src/driver/types.ts): the operations, where each task works, cooling down. */
export type RunDriver = Pick<Driver, "apply" | "plan" | "destroy" | "taskDir" | "coolDown" | "keepWarm" | "planToApply" | "applyPlan" | "discardPlan" | "stateObjects">;

/** A module task's provider values and `task_env` (CTS passes them through the environment only). */
function taskEnvironment(e: TaskEntry, lookup?: TemplateLookup): Record<string, string> {
  const t = e.task as { environment?: (lookup?: TemplateLookup) => Record<string, string> };
  return typeof t.environment === "function" ? t.environment(lookup) : {};
}

/** The template values runs read (src/watch/template-values.ts): read on use, kept fresh by the daemon. */
export interface RunTemplates extends TemplateLookup {
  /** Reads the values not read yet. */
  ensure(deps: Iterable<TemplateDependency>, signal?: AbortSignal): Promise<void>;
  /** A digest of the current values (never the values): part of what the no-op skip compares. */
  digest(deps: Iterable<TemplateDependency>): string;
  /** Tells `onChange` when one of the values changes (the triggers re-run the task); returns the unsubscribe. */
  subscribe(deps: Iterable<TemplateDependency>, onChange: () => void): () => void;
}

/** What one attempt needs. */
export interface RunDeps {
  loaded: LoadedConfig;
  driver: RunDriver;
  synthesizer: Synthesizer;
  inputs: TaskInputSource;
  log: Logger;
  metrics?: Metrics;
  /** What outlives a run: applied keys and counts, held plans (src/state/); default: kept in memory only. */
  state?: TaskState;
  /** Where each task's Terraform state is kept, looked at without Terraform (absent: the skip keys on the JSON alone). */
  states?: TerraformStates;
  /** Values of provider templates and Vault secrets (absent: a task that uses one fails with a clear error). */
  templates?: RunTemplates;
}

/** `applied`: what the no-op skip compares, the JSON's hash and, when the task reads templates, a keyed digest of their values. */
type Prepared = { synth: SynthResult; ws: TaskWorkspace; applied: string; count: number | undefined };

/** How many instances (services), catalog services, nodes, intentions or config entries the condition's data holds; undefined for other conditions. */
function conditionCount(e: TaskEntry, input: AnyTaskInput): number | undefined {
  switch (e.task.condition.kind) {
    case "services":
      return input.services?.length;
    case "catalog-services":
      return input.catalogServices ? Object.keys(input.catalogServices).length : undefined;
    case "nodes":
      return input.nodes?.length;
    case "intentions":
      return input.intentions?.length;
    case "config-entries":
      return input.configEntries?.length;
    default:
      return undefined;
  }
}

/** What a condition's data is made of, in a message. */
const COUNTED: Record<string, string> = { services: "instances", "catalog-services": "catalog services", nodes: "nodes", intentions: "intentions", "config-entries": "config entries" };

/**
 * The last hop of a run: one attempt reads the task's input (task-input.ts), synthesizes it
 * (src/synth/synthesizer.ts), skips when the JSON equals the last applied one, and hands the JSON
 * to the Terraform driver (src/terraform/). Throws what failed; retries and events are the
 * caller's (runs.ts). It also owns what runs belong to: the task's working dir, the warm
 * providers, the synthesizer's worker.
 *
 * The applied key (the no-op skip) is voided in the task state (src/state/) before an apply and
 * recorded only after it succeeded: an apply that failed, was cancelled or was cut short by a crash
 * may have changed part of the infrastructure, so the next run must apply even if its JSON is the same.
 */
export class TaskRunner {
  /** Plans held for approval, by task. */
  readonly holds: Holds;
  /** What outlives a run (applied keys and counts, holds). */
  readonly state: TaskState;
  /** Tasks this process has applied: the first apply after a start runs Terraform whatever the inputs (as CTS). */
  private readonly appliedHere = new Set<string>();

  constructor(private readonly deps: RunDeps) {
    this.state = deps.state ?? memoryTaskState();
    this.holds = new Holds(this.state);
    this.unsaved = new UnsavedStates({ log: deps.log, ...(deps.metrics ? { metrics: deps.metrics } : {}) });
    this.guarded = new GuardedApply({
      driver: deps.driver,
      holds: this.holds,
      log: deps.log,
      synthesizer: deps.synthesizer,
      voidApplied: (e, count) => this.voidAppliedHash(e, count),
      applied: (e, synth, key, result, count, planned) => this.applied(e, synth, key, result, count, planned),
    });
  }

  /** Plan guards and approval (guarded-apply.ts). */
  private readonly guarded: GuardedApply;

  /** Applies that could not save their state, until the next successful apply of the task reports what is outside it. */
  private readonly unsaved: UnsavedStates;

  /** How long each task's run history is kept (the config's `history`, with its defaults). */
  get retention(): RunRetention {
    return historyRetention(this.deps.loaded.config.history);
  }

  /** The guards a task's plans are checked with (its own over the config's), and whether every plan waits for approval. */
  guardsOf(e: TaskEntry): { guards?: GuardSettings; always: boolean } {
    const guards = effectiveGuards(this.deps.loaded.config.guards, e.task.guards);
    return { ...(guards ? { guards } : {}), always: e.task.approval === "always" };
  }

  /** One attempt at a run: apply (skipped when nothing changed), plan or destroy. */
  async attempt(e: TaskEntry, mode: RunMode, signal: AbortSignal): Promise<RunOutcome> {
    const { synth, ws, applied, count } = await this.prepare(e, signal);
    if (mode === "apply") this.checkEmpty(e, count);
    let stateLost: string | undefined;
    // CTS applies a scheduled task on every tick, whatever its data: the infrastructure may have drifted.
    if (mode === "apply" && e.task.condition.kind !== "schedule" && applied === this.state.applied(e.name)?.key) {
      // The same inputs: skipped, unless the Terraform state they were applied to is gone or replaced.
      stateLost = await this.stateLost(e.name);
      if (!stateLost) {
        // The inputs went back to what is applied: a hold made for other inputs no longer applies.
        if (this.holds.get(e.name).held || this.holds.get(e.name).rejected) await this.dropHold(e, "the inputs are back to what is applied");
        return { task: e.name, ok: true, outcome: "no-op", synth };
      }
      this.deps.log.warn(
        `task '${e.name}': the Terraform state it applied to ${stateLost}; running it again instead of skipping it (what it created may still exist outside any state: check the plan, or import it)`,
        { task: e.name },
      );
    }
    const { driver } = this.deps;
    const onOutput = this.outputLog(e);
    if (mode === "plan") {
      const result = await driver.plan(ws, { signal, onOutput });
      return { task: e.name, ok: true, outcome: "planned", result, synth };
    }
    if (mode === "destroy") {
      await this.voidAppliedHash(e);
      const result = await driver.destroy(ws, { signal, onOutput });
      this.state.recordOutputs(e.name, { outputs: {}, updatedAt: new Date().toISOString() });
      return { task: e.name, ok: true, outcome: "destroyed", result, synth };
    }
    let outcome: RunOutcome;
    try {
      outcome = await this.apply(e, synth, ws, applied, signal, count, stateLost);
    } catch (err) {
      // Terraform could not save the state (or lost its lock): the retry or the next run plans with
      // refresh, and its apply reports what the failed one left outside the state.
      this.unsaved.failed(e.name, err);
      throw err;
    }
    const stateObjects = driver.stateObjects?.bind(driver);
    const unsaved = outcome.outcome === "applied" ? await this.unsaved.settle(e.name, stateObjects ? () => stateObjects(ws, { signal }) : undefined) : undefined;
    return { ...outcome, ...(stateLost ? { stateLost } : {}), ...(unsaved ? { stateNotSaved: unsaved } : {}) };
  }

  /**
   * Whether the Terraform state the task's last apply wrote is still where it was: undefined when it
   * is (or when that cannot be told: another backend, Consul not answering), else what happened to
   * it ("is gone", "was replaced").
   */
  async stateLost(task: string): Promise<string | undefined> {
    const was = this.state.applied(task)?.state;
    if (was === undefined || !this.deps.states) return undefined;
    const now = await this.deps.states.fingerprint(task);
    if (now === undefined || now === was) return undefined;
    return now === null ? "is gone (no state where the backend keeps it)" : "was replaced (another state is where the backend keeps it)";
  }

  /**
   * One drift check: plans (refresh on) the task's JSON when it equals the last applied one; changes
   * present then mean the infrastructure was changed out of band. With `driftCheck.correct`, applies it again.
   */
  async checkDrift(e: TaskEntry, signal: AbortSignal): Promise<RunOutcome> {
    const { correct } = driftSettings(this.deps.loaded.config.driftCheck, e.task.driftCheck);
    const at = () => new Date().toISOString();
    const last = this.state.applied(e.name)?.key;
    if (!last) return { task: e.name, ok: true, outcome: "not-applied", drift: { state: "not-applied", checkedAt: at() } };
    const { synth, ws, applied: key, count } = await this.prepare(e, signal);
    if (key !== last) return { task: e.name, ok: true, outcome: "inputs-changed", synth, drift: { state: "inputs-changed", checkedAt: at() } };
    // A lost state shows as drift (the plan creates everything again); the event says why.
    const stateLost = await this.stateLost(e.name);
    if (stateLost) this.deps.log.warn(`task '${e.name}': the Terraform state it applied to ${stateLost}; the drift check plans against what is there now`, { task: e.name });
    const lost = stateLost ? { stateLost } : {};
    const plan = await this.deps.driver.plan(ws, { signal, onOutput: this.outputLog(e) });
    if (!plan.changesPresent) return { task: e.name, ok: true, outcome: "in-sync", result: plan, synth, drift: { state: "in-sync", checkedAt: at() }, ...lost };
    if (!correct) return { task: e.name, ok: true, outcome: "drift", result: plan, synth, drift: { state: "drifted", checkedAt: at(), changes: plan.summary }, ...lost };
    const applied = await this.apply(e, synth, ws, key, signal, count, stateLost);
    // Plan guards held the correction: the drift stays, waiting for `cts approve`.
    if (applied.outcome !== "applied") return { ...applied, outcome: "drift", drift: { state: "drifted", checkedAt: at(), changes: plan.summary }, ...lost };
    return { ...applied, outcome: "drift", result: plan, drift: { state: "corrected", checkedAt: at(), changes: plan.summary, applied: applied.result!.summary }, ...lost };
  }

  /** Where a task works (removed with the task). */
  taskDir(task: string): string {
    return this.deps.driver.taskDir(task);
  }

  /** Ends warm provider processes: of one task, or all of them when this instance stops running tasks. */
  async coolDown(task?: string): Promise<void> {
    await this.deps.driver.coolDown?.(task);
  }

  /** Gets the synthesizer ready for a run of `e` that is about to come (a changed task, before its buffer period). */
  warm(e: TaskEntry): void {
    this.deps.synthesizer.prewarm?.(e.ref);
  }

  /** Keeps the synthesizer's worker and the driver's provider processes warm through quiet spells, or lets them end when idle. */
  keepWarm(warm: boolean): void {
    this.deps.synthesizer.keepWarm?.(warm);
    this.deps.driver.keepWarm?.(warm);
  }

  /** Closes what runs belong to (the synthesizer's worker). */
  close(): Promise<void> {
    return this.deps.synthesizer.close();
  }

  private async prepare(e: TaskEntry, signal: AbortSignal): Promise<Prepared> {
    const { loaded, driver, synthesizer } = this.deps;
    const input = await this.deps.inputs.inputOf(e, signal);
    // Task chains: the upstream tasks' latest plain outputs, as the task state keeps them.
    if (e.task.after?.length) input.outputs = upstreamOutputs(e.task.after, (task) => this.state.outputs(task));
    const synthStarted = performance.now();
    const synth = await tracePhase("synthesize", () =>
      synthesizer.synth(e.ref, input, {
        backend: loaded.config.driver?.terraform?.backend,
        configDir: loaded.dir,
        taskDir: driver.taskDir(e.name),
        providerVersions: loaded.config.driver?.terraform?.providerVersions,
      }),
    );
    this.deps.metrics?.phase(e.name, "synthesize", (performance.now() - synthStarted) / 1000);
    // Stopped (pause, stop, delete) while reading or synthesizing: Terraform is not started at all.
    if (signal.aborted) throw new CtsError("TERRAFORM_CANCELLED", "external", "was cancelled before Terraform started; nothing was changed.", { task: e.name });
    // Secrets are read at every run (rotation needs no restart) and reach Terraform only as TF_VAR_ env.
    const count = conditionCount(e, input);
    const described = (ws: TaskWorkspace): TaskWorkspace => {
      if (e.task.description) ws.description = e.task.description;
      if (e.task.terraformCloudWorkspace) ws.terraformCloudWorkspace = e.task.terraformCloudWorkspace;
      return ws;
    };
    const deps = taskTemplateDependencies(e.task as { secrets?: unknown; providers?: unknown });
    if (deps.size === 0) return { synth, ws: described({ task: e.name, json: synth.json, env: { ...taskEnvironment(e), ...secretEnv(e.name, e.task.secrets) } }), applied: synth.hash, count };
    const templates = this.deps.templates;
    if (!templates) throw new CtsError("CONFIG_INVALID", "usage", "reads Vault secrets or Consul keys through templates, which this command does not render.", { task: e.name });
    try {
      await templates.ensure(deps.values(), signal);
    } catch (err) {
      if (err instanceof CtsError && !err.task) throw new CtsError(err.code, err.category, err.message, { task: e.name, cause: err, detail: err.detail });
      throw err;
    }
    let env: Record<string, string>;
    try {
      env = { ...taskEnvironment(e, templates), ...secretEnv(e.name, e.task.secrets, process.env, templates) };
    } catch (err) {
      if (err instanceof TemplateRenderError) throw new CtsError("SECRET_MISSING", "usage", `a provider template cannot be rendered: ${err.message}.`, { task: e.name, cause: err });
      throw err;
    }
    return { synth, ws: described({ task: e.name, json: synth.json, env }), applied: `${synth.hash}+${templates.digest(deps.values())}`, count };
  }

  private outputLog(e: TaskEntry): (line: string) => void {
    return (line) => this.deps.log.debug(`[${e.name}] ${line}`, { task: e.name });
  }

  /**
   * Forgets the applied key before Terraform may change anything, wherever the task state keeps
   * it (a file, Consul KV). A count of instances about to be applied is kept: an apply cut short
   * (the daemon stopped, Terraform killed) may already have put them in place, and a restart must
   * still refuse a drop to none (allowEmpty: false). A void that cannot be kept fails the run.
   */
  private async voidAppliedHash(e: TaskEntry, count?: number): Promise<void> {
    await this.state.voidApplied(e.name, count);
  }

  /**
   * A condition that held instances at the last apply and holds none now: applied only when the
   * task allows empty data (the default, as CTS), and logged either way. A drop is not an error
   * of Consul's (a filtered or denied read fails before this): it is what Consul says now.
   */
  private checkEmpty(e: TaskEntry, count: number | undefined): void {
    const before = this.state.applied(e.name)?.count;
    if (count !== 0 || before === undefined || before === 0) return;
    const what = COUNTED[e.task.condition.kind] ?? "items";
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

  private async apply(e: TaskEntry, synth: SynthResult, ws: TaskWorkspace, applied: string, signal: AbortSignal, count?: number, stateLost?: string): Promise<RunOutcome> {
    const { guards, always } = this.guardsOf(e);
    // Without guards or approval a run applies at once: no plan first (the fast path).
    if (guards || always || this.holds.get(e.name).held)
      return this.guarded.apply({ e, synth, ws, key: applied, signal, guards, always, onOutput: this.outputLog(e), count, stateLost });
    await this.voidAppliedHash(e, count);
    const result = await this.deps.driver.apply(ws, { signal, onOutput: this.outputLog(e) });
    return this.applied(e, synth, applied, result, count);
  }

  /**
   * Records a successful apply in the task state: the applied key (the JSON's hash, with the
   * template values' digest), the count, and the fingerprint of the state it wrote.
   */
  private async applied(e: TaskEntry, synth: SynthResult, applied: string, result: RunResult, count?: number, planned = false): Promise<RunOutcome> {
    const state = await this.deps.states?.fingerprint(e.name);
    this.state.recordApplied(e.name, { key: applied, ...(count !== undefined ? { count } : {}), ...(typeof state === "string" ? { state } : {}) });
    // The start's apply of what is already there (after `cts once`, a restart) changed nothing: a
    // no-op, said as one. A kept plan with changes (`planned`: approved, or past the guards) applied something.
    const first = !this.appliedHere.has(e.name) && !planned;
    this.appliedHere.add(e.name);
    // The outputs the apply left (a driver that could not read them leaves the ones from before).
    if (result.outputs) this.state.recordOutputs(e.name, { outputs: knownSecrets.redactDeep(result.outputs), updatedAt: new Date().toISOString() });
    return { task: e.name, ok: true, outcome: first && !result.changesPresent ? "no-op" : "applied", result, synth };
  }

  /** Lets go of a task's hold: the kept plan is discarded, the record cleared. */
  dropHold(e: TaskEntry | string, why: string | undefined): Promise<HeldPlan | undefined> {
    return this.guarded.dropHold(e, why);
  }

  /** Rejects a task's held plan: discards the kept plan; the same inputs are not planned again until they change. */
  reject(name: string): Promise<HeldPlan | undefined> {
    return this.guarded.reject(name);
  }
}
