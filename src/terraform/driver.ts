import { CtsError, messageOf } from "../errors.ts";
import { noMetrics } from "../metrics/metrics.ts";
import { CommandRunner, type Phase } from "./command-runner.ts";
import { needsReinit } from "./failures.ts";
import { validateTaskName } from "./names.ts";
import { createInitReuse } from "./init-reuse.ts";
import { Initializer } from "./initializer.ts";
import { createInitSteps } from "./init-steps.ts";
import { stateLockWaiter } from "./lock-wait.ts";
import { ChangeCommands, changeCommandWords, type ChangeKind } from "./plan-apply.ts";
import { redactedError, redactedResult } from "./redaction.ts";
import { createKeyedSerializer } from "./serial.ts";
import { definedOnly, driverSettings } from "./settings.ts";
import type { LocalTerraformDriver, RunOptions, RunResult, TaskWorkspace, TerraformDriverOptions } from "./types.ts";
import { providerLauncher } from "./provider-process.ts";
import { createWarmPool, DEFAULT_WARM_LIMITS } from "./warm-pool.ts";
import { launchedProviders, PooledProviders, type ProviderSource } from "./warm-providers.ts";
import { WorkingRoot } from "./working-root.ts";

/**
 * The Terraform driver: runs tofu/terraform in `<workingDir>/<task>`, one operation per task at a
 * time, different tasks in parallel. Each operation writes the task's files, runs `init` only when
 * the init inputs changed (or `.terraform` is gone), makes sure the task's workspace exists, then
 * runs the command with TF_WORKSPACE=<task> so the selected workspace on disk never matters.
 */
export function createTerraformDriver(options: TerraformDriverOptions): LocalTerraformDriver {
  const settings = driverSettings(options);
  const { root, killGraceMs, lockTimeoutMs } = settings;
  const changes = new ChangeCommands(lockTimeoutMs);
  const notice = (line: string) => (options.notice ? options.notice(line) : options.log?.("driver", line));
  const tasks = createKeyedSerializer();
  const metrics = options.metrics ?? noMetrics;
  const runner = new CommandRunner(settings, {
    ...(options.env ? { env: options.env } : {}),
    ...(options.cliConfigFile ? { cliConfigFile: options.cliConfigFile } : {}),
    ...(options.pluginCacheDir ? { pluginCacheDir: options.pluginCacheDir } : {}),
    ...(options.log ? { log: options.log } : {}),
    ...(options.redact ? { redact: options.redact } : {}),
    notice,
    metrics,
  });
  const track = runner.track;
  const folders = new WorkingRoot(root, killGraceMs, notice);
  const timed = <T>(task: string, phase: Phase, step: () => Promise<T>): Promise<T> => runner.phase(task, phase, step);

  const debugLog = (task: string, line: string) => options.debugLog?.(task, options.redact ? options.redact(line) : line);
  const providers: ProviderSource =
    options.warmProviders === false
      ? launchedProviders
      : new PooledProviders(
          createWarmPool({
            limits: { ...DEFAULT_WARM_LIMITS, ...definedOnly(options.warmProviders) },
            launcher: providerLauncher({ killGraceMs: Math.min(killGraceMs, 5_000), track, output: (task, line) => debugLog(task, `provider: ${line}`) }),
            log: notice,
          }),
          { shared: (job) => runner.pluginCache.shared(job), ...(options.log ? { log: options.log } : {}) },
        );

  const envFor = (task?: Record<string, string>, workspace?: string) => runner.env(task, workspace);
  const waitingOutLocks = stateLockWaiter({
    timeoutMs: lockTimeoutMs,
    ...(options.onStateLockWait ? { onWait: options.onStateLockWait } : {}),
    ...(options.log ? { log: options.log } : {}),
  });
  const initializer = new Initializer({
    steps: createInitSteps(lockTimeoutMs),
    // Fresh task folders with the same init inputs share one `init` (see init-reuse.ts).
    ...(options.shareInit === false ? {} : { reuse: createInitReuse(options.pluginCacheDir ? { pluginCacheDir: options.pluginCacheDir } : {}) }),
    ...(options.pluginCacheDir ? { pluginCacheDir: options.pluginCacheDir } : {}),
    env: (task) => runner.env(task),
    waitForLocks: waitingOutLocks,
    phase: (task, phase, step) => runner.phase(task, phase, step),
    ...(options.log ? { log: options.log } : {}),
  });

  async function execute(kind: ChangeKind, ws: TaskWorkspace, opts: RunOptions): Promise<RunResult> {
    const dir = await folders.prepare(ws.task);
    const op = runner.operation(ws, dir, opts);
    const command = (extraEnv?: Record<string, string>) =>
      timed(ws.task, kind, () => waitingOutLocks(op, () => changes.run(kind, op, extraEnv)));
    // With warm providers: point the command at pooled provider processes; if one of them fails
    // the run (crashed, unreachable), run the command once more with a normal launch.
    const main = () => providers.run(ws.task, dir, () => envFor(ws.env, ws.task), command);
    try {
      op.throwIfAborted(op.commandName(changeCommandWords(kind)));
      await folders.writeFiles(dir, ws);
      const initialized = await initializer.ensure(op, ws);
      try {
        return { ...(await main()), initialized };
      } catch (err) {
        // A damaged .terraform or a vanished workspace: repair once, then let a second failure stand.
        if (!(err instanceof CtsError) || err.code !== "TERRAFORM_FAILED" || !needsReinit(String(err.detail.errors ?? ""))) throw err;
        options.log?.(ws.task, "working directory needs a fresh init; re-initializing and retrying once");
        await initializer.again(op, ws);
        return { ...(await main()), initialized: true };
      }
    } finally {
      op.dispose();
    }
  }

  const run = (kind: ChangeKind, ws: TaskWorkspace, opts: RunOptions = {}): Promise<RunResult> => {
    try {
      validateTaskName(ws.task);
    } catch (err) {
      return Promise.reject(err);
    }
    const done = tasks.run(ws.task, () => execute(kind, ws, opts));
    const redact = options.redact;
    // Provider errors can quote a secret (an invalid key, a URL with a token): scrub what leaves.
    return redact
      ? done.then(
          (r) => redactedResult(r, redact),
          (err: unknown) => Promise.reject(redactedError(err, redact)),
        )
      : done;
  };

  return {
    apply: (ws, opts) => run("apply", ws, opts),
    plan: (ws, opts) => run("plan", ws, opts),
    destroy: (ws, opts) => run("destroy", ws, opts),
    version: () => runner.version(),
    hungCommands: () => runner.hungCommands(),
    warmProcesses: () => providers.processes(),
    coolDown: async (task) => {
      await providers.cool(task === undefined ? undefined : folders.folderOf(task));
    },
    close: async () => {
      await providers.close();
      runner.close();
    },
    taskDir: (task) => folders.taskDir(task),
  };
}
