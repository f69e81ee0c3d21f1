import { createKeyedSerializer } from "../driver/serial.ts";
import { validateTaskName } from "../driver/task-name.ts";
import { noMetrics } from "../metrics/metrics.ts";
import { createCommandRunner, type CommandRunner } from "./command-runner.ts";
import { needsFreshInit } from "./failures.ts";
import { createInitReuse } from "./init-reuse.ts";
import { createInitSteps } from "./init-steps.ts";
import { Initializer } from "./initializer.ts";
import { stateLockWaiter, type StateLockWaiter } from "./lock-wait.ts";
import type { Operation } from "./operation.ts";
import { ChangeCommands, changeCommandWords, discardKeptPlans, type ChangeKind, type ChangeOutcome } from "./plan-apply.ts";
import { KEPT_PLAN_FILE } from "./working-dir.ts";
import { providerLauncher } from "./provider-process.ts";
import { redacting } from "./redaction.ts";
import { definedOnly, driverSettings, type DriverSettings } from "./settings.ts";
import type { LocalTerraformDriver, RunOptions, RunResult, SavedPlan, TaskWorkspace, TerraformDriverOptions } from "./types.ts";
import type { WarmProcessInfo } from "./warm-pool.ts";
import { createWarmPool, DEFAULT_WARM_LIMITS } from "./warm-pool.ts";
import { launchedProviders, PooledProviders, type ProviderSource } from "./warm-providers.ts";
import { identityText } from "./version.ts";
import { binaryPath, PageWarmer } from "./page-warmer.ts";
import { WorkingRoot } from "./working-root.ts";
import { stateNotSavedError, stateNotSavedSign, takeErroredState } from "./state-save.ts";
import { CtsError } from "../errors/cts-error.ts";
import { shownObjects, type StateObject } from "../driver/state-objects.ts";

/** A main command other than plain plan/apply/destroy (a kept plan, its apply). */
type MainCommand = (op: Operation, extraEnv?: Record<string, string>) => Promise<ChangeOutcome>;

/** The parts a local driver is made of, one job each. */
export interface LocalDriverParts {
  /** Task folders under the working root, and their files. */
  folders: WorkingRoot;
  /** Operations and the processes of their commands. */
  runner: CommandRunner;
  /** Whether a folder needs `init`, and bringing it there. */
  initializer: Initializer;
  /** plan/apply/destroy and what they changed. */
  changes: ChangeCommands;
  /** Warm provider processes, or Terraform's own launch. */
  providers: ProviderSource;
  /** Waits out a state lock held elsewhere. */
  waitForLocks: StateLockWaiter;
  /** Keeps the files of the programs a run starts warm through quiet spells (page-warmer.ts). */
  warmer?: PageWarmer;
  /** Operations under way (the warmer reads nothing meanwhile). */
  operations?: { count: number };
  /** The driver's log, per task. */
  log?: (task: string, line: string) => void;
  /** Scrubs secrets from what leaves the driver. */
  redact?: (text: string) => string;
}

/**
 * The local Terraform driver: runs tofu/terraform in `<workingDir>/<task>`, one operation per task
 * at a time, different tasks in parallel. Each operation writes the task's files, runs `init` only
 * when the init inputs changed (or `.terraform` is gone), makes sure the task's workspace exists,
 * then runs the command with TF_WORKSPACE=<task> so the selected workspace on disk never matters.
 */
export class LocalDriver implements LocalTerraformDriver {
  private readonly tasks = createKeyedSerializer();

  constructor(private readonly parts: LocalDriverParts) {}

  apply(ws: TaskWorkspace, opts?: RunOptions): Promise<RunResult> {
    return this.run("apply", ws, opts);
  }

  plan(ws: TaskWorkspace, opts?: RunOptions): Promise<RunResult> {
    return this.run("plan", ws, opts);
  }

  destroy(ws: TaskWorkspace, opts?: RunOptions): Promise<RunResult> {
    return this.run("destroy", ws, opts);
  }

  planToApply(ws: TaskWorkspace, opts?: RunOptions): Promise<SavedPlan> {
    return this.run("plan", ws, opts, (op, extraEnv) => this.parts.changes.planToKeep(op, extraEnv)) as Promise<SavedPlan>;
  }

  applyPlan(ws: TaskWorkspace, ref: string, opts?: RunOptions): Promise<RunResult> {
    return this.run("apply", ws, opts, (op, extraEnv) => this.parts.changes.applyKept(op, ref, extraEnv));
  }

  async discardPlan(task: string, ref: string): Promise<void> {
    validateTaskName(task);
    if (!KEPT_PLAN_FILE.test(ref)) return;
    await this.tasks.run(task, () => discardKeptPlans(this.parts.folders.taskDir(task), ref, task));
  }

  /** `show -json` of the task's saved state (in its workspace), read for its objects. */
  stateObjects(ws: TaskWorkspace, opts: RunOptions = {}): Promise<StateObject[]> {
    try {
      validateTaskName(ws.task);
    } catch (err) {
      return Promise.reject(err);
    }
    return this.tasks.run(ws.task, async () => {
      const { folders, runner, initializer } = this.parts;
      const dir = await folders.prepare(ws.task);
      const op = runner.operation(ws, dir, opts);
      try {
        await folders.writeFiles(dir, ws);
        await initializer.ensure(op, ws);
        const shown = await op.text(["show", "-json", "-no-color"], ws.task, { quiet: true });
        const objects = shown.exitCode === 0 ? shownObjects(shown.lines.join("\n")) : undefined;
        if (!objects) throw new CtsError("TERRAFORM_FAILED", "external", `\`${op.commandName(["show"])} -json\` could not read the task's state (exit ${shown.exitCode ?? "by signal"}).`, { task: ws.task });
        return objects;
      } finally {
        op.dispose();
      }
    });
  }

  version(): Promise<string> {
    return this.parts.runner.version();
  }

  hungCommands(): number {
    return this.parts.runner.hungCommands();
  }

  warmProcesses(): WarmProcessInfo[] {
    return this.parts.providers.processes();
  }

  keepWarm(on: boolean): void {
    this.parts.providers.keepWarm(on);
    this.parts.warmer?.keep(on);
  }

  async coolDown(task?: string): Promise<void> {
    await this.parts.providers.cool(task === undefined ? undefined : this.parts.folders.folderOf(task));
  }

  async close(): Promise<void> {
    this.parts.warmer?.close();
    await this.parts.providers.close();
    this.parts.runner.close();
  }

  taskDir(task: string): string {
    return this.parts.folders.taskDir(task);
  }

  /** One operation of a task, queued behind the task's previous one; what leaves is scrubbed of secrets. */
  private run(kind: ChangeKind, ws: TaskWorkspace, opts: RunOptions = {}, command?: MainCommand): Promise<RunResult> {
    try {
      validateTaskName(ws.task);
    } catch (err) {
      return Promise.reject(err);
    }
    // Provider errors can quote a secret (an invalid key, a URL with a token): scrub what leaves.
    return redacting(
      this.tasks.run(ws.task, () => this.counted(() => this.operate(kind, ws, opts, command))),
      this.parts.redact,
    );
  }

  /** An operation, counted while under way (the page warmer waits for none to run). */
  private async counted<T>(operation: () => Promise<T>): Promise<T> {
    const ops = this.parts.operations;
    if (ops) ops.count++;
    try {
      return await operation();
    } finally {
      if (ops) ops.count--;
    }
  }

  /** The steps of one operation: the task's folder and files, `init` when needed, the main command. */
  private async operate(kind: ChangeKind, ws: TaskWorkspace, opts: RunOptions, command?: MainCommand): Promise<RunResult> {
    const { folders, runner, initializer } = this.parts;
    const dir = await folders.prepare(ws.task);
    const op = runner.operation(ws, dir, opts);
    try {
      op.throwIfAborted(op.commandName(changeCommandWords(kind)));
      await folders.takeOver(dir, ws.task);
      await folders.writeFiles(dir, ws);
      const initialized = await initializer.ensure(op, ws);
      try {
        return { ...(await this.mainCommand(kind, op, ws, command)), initialized };
      } catch (err) {
        // A damaged .terraform or a vanished workspace: repair once, then let a second failure stand.
        if (!needsFreshInit(err)) throw err;
        this.parts.log?.(ws.task, "working directory needs a fresh init; re-initializing and retrying once");
        await initializer.again(op, ws);
        return { ...(await this.mainCommand(kind, op, ws, command)), initialized: true };
      }
    } finally {
      op.dispose();
    }
  }

  /**
   * plan, apply or destroy: on warm providers when there are (once more with a normal launch if
   * one of them fails it), timed, waiting out a state lock held elsewhere up to the lock timeout.
   */
  private mainCommand(kind: ChangeKind, op: Operation, ws: TaskWorkspace, command?: MainCommand): Promise<ChangeOutcome> {
    const { runner, providers, changes, waitForLocks } = this.parts;
    const done = providers.run(
      ws.task,
      op.dir,
      () => runner.env(ws.env, ws.task),
      (extraEnv) => runner.phase(ws.task, kind, () => waitForLocks(op, () => (command ? command(op, extraEnv) : changes.run(kind, op, extraEnv)))),
    );
    return kind === "plan" ? done : stateSaved(op, done);
  }
}

/**
 * An apply or destroy whose output says its state was not saved or its state lock was lost fails
 * with TERRAFORM_STATE_NOT_SAVED, naming what Terraform left in errored.tfstate, even when it
 * exited 0: the run must not count as applied (its key stays void, the next run plans with refresh).
 */
async function stateSaved(op: Operation, done: Promise<ChangeOutcome>): Promise<ChangeOutcome> {
  let outcome: ChangeOutcome;
  try {
    outcome = await done;
  } catch (err) {
    if (!(err instanceof CtsError) || err.code !== "TERRAFORM_FAILED") throw err;
    const errors = String(err.detail.errors ?? err.message);
    const sign = stateNotSavedSign(errors);
    if (!sign) throw err;
    throw stateNotSavedError(op.task, { command: String(err.detail.command ?? op.commandName(["apply"])), sign, errors, left: takeErroredState(op.dir, op.task) });
  }
  const sign = stateNotSavedSign(outcome.output);
  if (sign) throw stateNotSavedError(op.task, { command: op.commandName(["apply"]), sign, errors: sign, left: takeErroredState(op.dir, op.task) });
  return outcome;
}

/** The local driver `options` describe, made of its parts. */
export function createTerraformDriver(options: TerraformDriverOptions): LocalTerraformDriver {
  const settings = driverSettings(options);
  const { log, redact, pluginCacheDir } = options;
  const notice = (line: string) => (options.notice ? options.notice(line) : log?.("driver", line));
  const runner = createCommandRunner(options, notice);
  const waitForLocks = stateLockWaiter({ timeoutMs: settings.lockTimeoutMs, onWait: options.onStateLockWait, log });
  const providers = providerSource(options, settings, runner, notice);
  const terraformBinary = binaryPath(settings.binary);
  // While no command runs: the Terraform binary, the warm providers' binaries and the daemon's own
  // program (`node`: code a quiet daemon does not run is paged in again for the first change).
  const operations = { count: 0 };
  const warmFiles = async () =>
    operations.count > 0 ? [] : [await terraformBinary(), ...providers.processes().map((p) => p.binary), process.execPath].filter((f): f is string => f !== undefined);
  return new LocalDriver({
    folders: new WorkingRoot(settings.root, settings.killGraceMs, notice, options.taskNotice ?? log, options.taskDirs),
    runner,
    initializer: new Initializer({
      steps: createInitSteps(settings.lockTimeoutMs),
      // Fresh task folders with the same init inputs share one `init` (see init-reuse.ts).
      reuse: options.shareInit === false ? undefined : createInitReuse(pluginCacheDir ? { pluginCacheDir } : {}),
      pluginCacheDir,
      env: (task) => runner.env(task),
      waitForLocks,
      phase: (task, phase, step) => runner.phase(task, phase, step),
      log,
      notice: options.taskNotice ?? log,
      // A binary that does not answer is reported by the command that needs it, not here.
      binary: () => runner.identity().then(identityText, () => undefined),
    }),
    changes: new ChangeCommands(settings.lockTimeoutMs),
    providers,
    waitForLocks,
    ...(options.warmPages === false ? {} : { warmer: new PageWarmer(warmFiles), operations }),
    log,
    redact,
  });
}

/** Warm providers from a pool with `driver.terraform.warmProviders`' limits, or Terraform's own launch when they are off. */
function providerSource(options: TerraformDriverOptions, settings: DriverSettings, runner: CommandRunner, notice: (line: string) => void): ProviderSource {
  if (options.warmProviders === false) return launchedProviders;
  const output = (task: string, line: string) => options.debugLog?.(task, options.redact ? options.redact(`provider: ${line}`) : `provider: ${line}`);
  const pool = createWarmPool({
    limits: { ...DEFAULT_WARM_LIMITS, ...definedOnly(options.warmProviders) },
    idleTimeoutSet: options.warmProviders !== undefined && options.warmProviders.idleTimeoutMs !== undefined,
    launcher: providerLauncher({ killGraceMs: Math.min(settings.killGraceMs, 5_000), track: runner.track, output }),
    log: notice,
  });
  return new PooledProviders(pool, { shared: (job) => runner.pluginCache.shared(job), log: options.log });
}
