import { pause } from "../time/pause.ts";
import { basename } from "node:path";
import { CtsError } from "../errors/cts-error.ts";
import { fencedCancel } from "../driver/types.ts";
import { abortedError, formatDuration, hungError, notStartedError, type AbortReason } from "./failures.ts";
import { UiStream } from "./json-ui.ts";
import { runProcess } from "./process.ts";
import type { RwLock } from "./rw-lock.ts";
import type { CommandTimeouts, RunOptions } from "./types.ts";

/** What an operation needs from the driver. */
export interface OperationDeps {
  binary: string;
  killGraceMs: number;
  /** Environment for one command; `workspace` sets TF_WORKSPACE. */
  env(workspace?: string): Record<string, string>;
  /** The driver's log sink; gets the task name and one human line. */
  log?: (task: string, line: string) => void;
  /** Scrubs secrets from each line before anyone sees it. */
  redact?: (text: string) => string;
  /** Per-command limits of the short commands (plan/apply/destroy have only the operation's). */
  timeouts: Required<CommandTimeouts>;
  /** The `-lock-timeout` given to commands that lock; added to their limit. */
  lockTimeoutMs: number;
  /** `init` holds it exclusively, every other command shared: init rewrites the plugin cache. */
  pluginCache: RwLock;
  /** Told each process group started and ended (reaper, group file). */
  track: (task: string, command: string) => { add(pgid: number): void; remove(pgid: number): void };
  /** Called each time a command hung and was killed. */
  onHung: (command: string) => void;
}

/** Result of a text-mode command (init, workspace, show). */
export interface TextResult {
  exitCode: number | undefined;
  /** stdout and stderr lines in arrival order. */
  lines: string[];
}

/** Result of a `-json` command (plan, apply). */
export interface JsonResult {
  exitCode: number | undefined;
  stream: UiStream;
  /** stderr lines (panics, flag errors printed before the JSON view starts). */
  stderr: string[];
}

/**
 * One driver operation (apply, plan or destroy) of one task: its deadline, its cancellation and
 * the commands it runs. Every command shares the operation's signal, so a timeout covers init,
 * workspace and the main command together.
 */
export class Operation {
  private readonly controller = new AbortController();
  private reason: AbortReason | undefined;
  private readonly timer: NodeJS.Timeout;
  private readonly unlink: () => void;

  constructor(
    readonly task: string,
    readonly dir: string,
    private readonly deps: OperationDeps,
    private readonly opts: RunOptions,
    readonly timeoutMs: number,
  ) {
    this.timer = setTimeout(() => this.abort("timeout"), timeoutMs);
    const external = opts.signal;
    const onAbort = () => this.abort("cancel", external?.reason);
    if (external?.aborted) this.abort("cancel", external.reason);
    external?.addEventListener("abort", onAbort, { once: true });
    this.unlink = () => external?.removeEventListener("abort", onAbort);
  }

  /** "tofu apply" — how messages name a command. */
  commandName(args: readonly string[]): string {
    const sub = args[0] === "workspace" ? args.slice(0, 2) : args.slice(0, 1);
    return [basename(this.deps.binary), ...sub, ...(args.includes("-destroy") ? ["-destroy"] : [])].join(" ");
  }

  /** Throws TERRAFORM_CANCELLED/TIMEOUT if the operation was stopped. */
  throwIfAborted(command: string): void {
    if (this.reason) throw this.abortError(command);
  }

  /**
   * Runs a text-mode command. All lines are kept (blank ones matter in `show`); only non-blank
   * ones reach the log, and none when `quiet` (an expected failure, or text the caller returns).
   */
  async text(args: string[], workspace?: string, { quiet = false }: { quiet?: boolean } = {}): Promise<TextResult> {
    return this.spawn(args, workspace, undefined, () => {
      const lines: string[] = [];
      const collect = (line: string) => {
        const l = line.trimEnd();
        lines.push(l);
        if (!quiet && l.trim()) this.emit(l);
      };
      return { out: collect, err: collect, result: (exitCode) => ({ exitCode, lines }) };
    });
  }

  /** Runs a `-json` command, turning its message stream into human lines as they come; `extraEnv` goes on top of the command's env. */
  async json(args: string[], workspace?: string, extraEnv?: Record<string, string>): Promise<JsonResult> {
    return this.spawn(args, workspace, extraEnv, () => {
      const stream = new UiStream();
      const stderr: string[] = [];
      return {
        out: (line) => {
          for (const l of stream.push(line)) this.emit(l);
        },
        err: (line) => {
          if (!line.trim()) return;
          stderr.push(line);
          this.emit(line);
        },
        result: (exitCode) => ({ exitCode, stream, stderr }),
      };
    });
  }

  /** Waits `ms`, or throws TERRAFORM_CANCELLED/TIMEOUT as soon as the operation is stopped. */
  async pause(ms: number): Promise<void> {
    await pause(ms, this.controller.signal);
    this.throwIfAborted("waiting for the state lock");
  }

  /** Waits for `p` (another task's work), or throws TERRAFORM_CANCELLED/TIMEOUT as soon as the operation is stopped. */
  async until<T>(p: Promise<T>, command: string): Promise<T> {
    this.throwIfAborted(command);
    const signal = this.controller.signal;
    let onAbort = () => {};
    const stopped = new Promise<never>((_, reject) => (onAbort = () => reject(this.abortError(command))));
    signal.addEventListener("abort", onAbort, { once: true });
    try {
      return await Promise.race([p, stopped]);
    } finally {
      signal.removeEventListener("abort", onAbort);
    }
  }

  /** Stops the deadline and forgets the caller's signal. */
  dispose(): void {
    clearTimeout(this.timer);
    this.unlink();
  }

  /** The time a command gets before it counts as hung, or undefined for plan/apply/destroy. */
  private limitFor(args: readonly string[]): number | undefined {
    const t = this.deps.timeouts;
    const locks = args.some((a) => a.startsWith("-lock-timeout")) ? this.deps.lockTimeoutMs : 0;
    switch (args[0]) {
      case "version":
        return t.version;
      case "workspace":
        return t.workspace + locks;
      case "validate":
        return t.validate;
      case "init":
        return t.init + locks;
      case "show":
        return t.show;
      default:
        return undefined;
    }
  }

  /**
   * Runs one command, with fresh collectors per attempt. A short command that does not exit
   * within its limit is killed (SIGINT, then SIGKILL to its group) and run once more; hanging
   * twice is TERRAFORM_HUNG.
   */
  private async spawn<R>(
    args: string[],
    workspace: string | undefined,
    extraEnv: Record<string, string> | undefined,
    fresh: () => { out: (l: string) => void; err: (l: string) => void; result: (exitCode: number | undefined) => R },
  ): Promise<R> {
    const command = this.commandName(args);
    const limit = this.limitFor(args);
    // plan/apply/destroy may run long, but not silently: Terraform reports progress every 10 s.
    const silence = limit === undefined ? this.deps.timeouts.silence : undefined;
    const guard = args[0] === "init" ? this.deps.pluginCache.exclusive.bind(this.deps.pluginCache) : this.deps.pluginCache.shared.bind(this.deps.pluginCache);
    for (let attempt = 1; ; attempt++) {
      this.throwIfAborted(command);
      const c = fresh();
      // One signal for this command: the operation stopping, or the command hanging. (A listener,
      // not AbortSignal.any: on Node 20 that costs more than the rest of starting a command.)
      const stop = new AbortController();
      let hung = false;
      const res = await guard(async () => {
        this.throwIfAborted(command);
        const timer = setTimeout(() => {
          hung = true;
          stop.abort();
        }, limit ?? silence);
        const heard = silence === undefined ? () => {} : () => timer.refresh();
        // The operation's reason goes with it (a fenced run's kill deadline, src/driver/types.ts).
        const forward = () => stop.abort(this.controller.signal.reason);
        this.controller.signal.addEventListener("abort", forward, { once: true });
        try {
          return await runProcess(this.deps.binary, args, {
            cwd: this.dir,
            env: extraEnv ? { ...this.deps.env(workspace), ...extraEnv } : this.deps.env(workspace),
            signal: stop.signal,
            killGraceMs: this.deps.killGraceMs,
            onStdout: (l) => (heard(), c.out(l)),
            onStderr: (l) => (heard(), c.err(l)),
            track: this.deps.track(this.task, command),
          });
        } finally {
          clearTimeout(timer);
          this.controller.signal.removeEventListener("abort", forward);
        }
      });
      if (res.spawnError) throw notStartedError(this.task, this.deps.binary, res.spawnError);
      if (hung && !this.reason && res.exitCode !== 0) {
        this.deps.onHung(command);
        const how = limit !== undefined ? `no exit within ${formatDuration(limit)}` : `no output for ${formatDuration(silence!)}`;
        if (attempt >= 2) throw hungError(this.task, command, limit ?? silence!, how);
        this.emit(`Terraform hung in \`${command}\` (${how}); killed it, running it once more`);
        continue;
      }
      // A command that finished successfully just as the signal fired keeps its result.
      if (res.aborted && res.exitCode !== 0) throw this.abortError(command);
      return c.result(res.exitCode);
    }
  }

  private emit(raw: string): void {
    const line = this.deps.redact ? this.deps.redact(raw) : raw;
    // A throwing listener must not break the output pipe of a command that is changing infrastructure.
    try {
      this.opts.onOutput?.(line);
      this.deps.log?.(this.task, line);
    } catch {
      /* listener bug: ignored */
    }
  }

  private abort(reason: AbortReason, cause?: unknown): void {
    if (this.reason) return;
    this.reason = reason;
    this.controller.abort(cause);
  }

  private abortError(command: string): CtsError {
    if (fencedCancel(this.controller.signal.reason))
      return new CtsError(
        "TERRAFORM_CANCELLED",
        "external",
        `\`${command}\` was stopped because this instance lost the lock it ran the task under (its Consul session is gone or about to be given away); it was ended before another instance could take the lock. What it was changing may be half done: the instance that holds the lock now runs the task again.`,
        { task: this.task, detail: { command, fenced: true } },
      );
    return abortedError(this.task, command, this.reason ?? "cancel", this.timeoutMs);
  }
}
