import { noMetrics, type Metrics } from "../metrics/metrics.ts";
import { tracePhase, traceEnv } from "../trace/tracing.ts";
import { commandEnv } from "./env.ts";
import { createGroupFile } from "./group-file.ts";
import { Operation } from "./operation.ts";
import { runProcess } from "./process.ts";
import { startReaper, type Reaper } from "./reaper.ts";
import { createRwLock } from "./rw-lock.ts";
import { driverSettings, type DriverSettings } from "./settings.ts";
import type { RunOptions, TaskWorkspace, TerraformDriverOptions } from "./types.ts";
import type { ProbeResult, TerraformProbe } from "./probe.ts";
import { binaryIdentity, terraformVersion, type BinaryIdentity } from "./version.ts";

/** What the runner needs besides the settings. */
export interface CommandRunnerOptions {
  /** The driver's base env (Consul address, token, TLS); never written to disk. */
  env?: Record<string, string>;
  /** The state backend's credentials, laid over every other variable (never written to disk). */
  backendEnv?: Record<string, string>;
  cliConfigFile?: string;
  pluginCacheDir?: string;
  /** Receives every human line a command prints, per task. */
  log?: (task: string, line: string) => void;
  /** Scrubs secrets from each line before anyone sees it. */
  redact?: (text: string) => string;
  /** The driver's own notices (a reaper that failed, a group file that cannot be written). */
  notice: (line: string) => void;
  metrics: Metrics;
}

/** What the group file and the process gauge name a probe's task: it runs for no task. */
const PROBE_TASK = "(probe)";

/** The run phases whose time is measured. */
export type Phase = "init" | "apply" | "plan" | "destroy";

/**
 * Starts the driver's Terraform processes: each task operation gets an `Operation` (its deadline,
 * cancellation, the per-command time limits and one retry of a hung command) whose commands run in
 * process groups of their own. Every group is known to the reaper (which kills them if this process
 * dies, even by SIGKILL) and recorded in the group file (for the next start, if the reaper died too).
 */
export class CommandRunner implements TerraformProbe {
  /**
   * `init` re-creates the plugin cache's entries, which break under a command of another task that
   * is starting a provider from them (fork/exec: no such file, checksum mismatch). So init runs
   * alone and every other command shares the cache; Terraform documents the cache as unsafe for
   * concurrent installs, and this covers concurrent use as well.
   */
  readonly pluginCache = createRwLock();
  private readonly reaper: Reaper;
  private readonly groupFile: ReturnType<typeof createGroupFile>;
  /**
   * The daemon's environment as it was when the driver was made, as a plain object: enumerating
   * process.env goes through a native interceptor per variable, and every command needs it twice.
   */
  private readonly inherited = { ...process.env };
  private hung = 0;
  private versionOnce: Promise<string> | undefined;
  private identityOnce: Promise<BinaryIdentity> | undefined;

  constructor(
    private readonly settings: DriverSettings,
    private readonly o: CommandRunnerOptions,
  ) {
    this.reaper = startReaper(settings.killGraceMs, o.notice);
    this.groupFile = createGroupFile(settings.root, o.notice);
  }

  /** The environment of a command: the daemon's, the driver's base, the task's; `workspace` sets TF_WORKSPACE. */
  env(task?: Record<string, string>, workspace?: string): Record<string, string> {
    return commandEnv({
      inherited: this.inherited,
      base: this.o.env,
      task,
      backend: this.o.backendEnv,
      cliConfigFile: this.o.cliConfigFile,
      pluginCacheDir: this.o.pluginCacheDir,
      workspace,
    });
  }

  /** Starts one operation of a task working in `dir`; the caller disposes it when the operation ends. */
  operation(ws: TaskWorkspace, dir: string, opts: RunOptions): Operation {
    const { binary, killGraceMs, timeouts, lockTimeoutMs } = this.settings;
    const deps = {
      binary,
      killGraceMs,
      // TRACEPARENT of the run's phase span (traced runs only): OpenTofu's own spans join the run's trace.
      env: (workspace?: string) => ({ ...this.env(ws.env, workspace), ...traceEnv() }),
      ...(this.o.log ? { log: this.o.log } : {}),
      ...(this.o.redact ? { redact: this.o.redact } : {}),
      timeouts,
      lockTimeoutMs,
      pluginCache: this.pluginCache,
      track: this.track,
      onHung: (command: string) => {
        this.hung++;
        this.o.metrics.terraformHung(command);
      },
    };
    return new Operation(ws.task, dir, deps, opts, opts.timeoutMs ?? this.settings.defaultTimeoutMs);
  }

  /** Follows the process groups one command of a task starts and ends (reaper, group file, gauge). */
  readonly track = (task: string, command: string) => ({
    add: (pgid: number) => {
      this.reaper.add(pgid);
      this.groupFile.add({ pgid, task, command });
      this.o.metrics.terraformProcess(command, 1);
    },
    remove: (pgid: number) => {
      this.reaper.remove(pgid);
      this.groupFile.remove(pgid);
      this.o.metrics.terraformProcess(command, -1);
    },
  });

  /** Runs a phase of a task's run and reports its time (failed phases too: a slow failure is worth seeing). */
  async phase<T>(task: string, phase: Phase, step: () => Promise<T>): Promise<T> {
    const started = performance.now();
    try {
      return await tracePhase(phase, step);
    } finally {
      this.o.metrics.phase(task, phase, (performance.now() - started) / 1000);
    }
  }

  /**
   * Runs one short command outside any task's operation (`version`, the doctor's `init`) as every
   * command runs: the driver's environment, a process group of its own known to the reaper and the
   * group file; SIGINT at `timeoutMs`, SIGKILL a grace period later.
   */
  async probe(binary: string, args: readonly string[], opts: { cwd?: string; timeoutMs: number }): Promise<ProbeResult> {
    const stdout: string[] = [];
    const stderr: string[] = [];
    const deadline = AbortSignal.timeout(opts.timeoutMs);
    const name = binary.slice(binary.lastIndexOf("/") + 1);
    const res = await runProcess(binary, args, {
      cwd: opts.cwd ?? process.cwd(),
      env: this.env(),
      signal: deadline,
      killGraceMs: this.settings.killGraceMs,
      onStdout: (line) => stdout.push(line),
      onStderr: (line) => stderr.push(line),
      track: this.track(PROBE_TASK, `${name} ${args[0] ?? ""}`.trim()),
    });
    return {
      exitCode: res.exitCode,
      stdout: stdout.join("\n"),
      stderr: stderr.join("\n"),
      timedOut: res.aborted,
      ...(res.spawnError ? { spawnError: res.spawnError } : {}),
    };
  }

  /** The binary's version, asked once; a failed answer is asked again next time. */
  version(): Promise<string> {
    this.versionOnce ??= terraformVersion(this, this.settings.binary, this.settings.timeouts.version).catch((err: unknown) => {
      this.versionOnce = undefined;
      throw err;
    });
    return this.versionOnce;
  }

  /** Which binary this is (kind and version), asked once; a failed answer is asked again next time. */
  identity(): Promise<BinaryIdentity> {
    this.identityOnce ??= binaryIdentity(this, this.settings.binary, this.settings.timeouts.version).catch((err: unknown) => {
      this.identityOnce = undefined;
      throw err;
    });
    return this.identityOnce;
  }

  /** How many commands hung and were killed since the driver was made. */
  hungCommands(): number {
    return this.hung;
  }

  /** Removes the group file when nothing recorded runs any more. */
  close(): void {
    this.groupFile.close();
  }
}

/**
 * The runner `options` describe: the one way cts starts Terraform. The local driver runs its
 * operations on it; `cts doctor` its probes (version, a providers' `init`), with the same environment.
 */
export function createCommandRunner(options: TerraformDriverOptions, notice: (line: string) => void): CommandRunner {
  return new CommandRunner(driverSettings(options), {
    env: options.env,
    backendEnv: options.backendEnv,
    cliConfigFile: options.cliConfigFile,
    pluginCacheDir: options.pluginCacheDir,
    log: options.log,
    redact: options.redact,
    notice,
    metrics: options.metrics ?? noMetrics,
  });
}
