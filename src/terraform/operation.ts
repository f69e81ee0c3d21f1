import { basename } from "node:path";
import type { CtsError } from "../errors.ts";
import { abortedError, notStartedError, type AbortReason } from "./failures.ts";
import { UiStream } from "./json-ui.ts";
import { runProcess } from "./process.ts";
import type { RunOptions } from "./types.ts";

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
    const onAbort = () => this.abort("cancel");
    if (external?.aborted) this.abort("cancel");
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
    const lines: string[] = [];
    const collect = (line: string) => {
      const l = line.trimEnd();
      lines.push(l);
      if (!quiet && l.trim()) this.emit(l);
    };
    const exitCode = await this.spawn(args, workspace, collect, collect);
    return { exitCode, lines };
  }

  /** Runs a `-json` command, turning its message stream into human lines as they come. */
  async json(args: string[], workspace?: string): Promise<JsonResult> {
    const stream = new UiStream();
    const stderr: string[] = [];
    const exitCode = await this.spawn(
      args,
      workspace,
      (line) => {
        for (const l of stream.push(line)) this.emit(l);
      },
      (line) => {
        if (!line.trim()) return;
        stderr.push(line);
        this.emit(line);
      },
    );
    return { exitCode, stream, stderr };
  }

  /** Stops the deadline and forgets the caller's signal. */
  dispose(): void {
    clearTimeout(this.timer);
    this.unlink();
  }

  private async spawn(args: string[], workspace: string | undefined, out: (l: string) => void, err: (l: string) => void): Promise<number | undefined> {
    const command = this.commandName(args);
    this.throwIfAborted(command);
    const res = await runProcess(this.deps.binary, args, {
      cwd: this.dir,
      env: this.deps.env(workspace),
      signal: this.controller.signal,
      killGraceMs: this.deps.killGraceMs,
      onStdout: out,
      onStderr: err,
    });
    if (res.spawnError) throw notStartedError(this.task, this.deps.binary, res.spawnError);
    // A command that finished successfully just as the signal fired keeps its result.
    if (res.aborted && res.exitCode !== 0) throw this.abortError(command);
    return res.exitCode;
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

  private abort(reason: AbortReason): void {
    if (this.reason) return;
    this.reason = reason;
    this.controller.abort();
  }

  private abortError(command: string): CtsError {
    return abortedError(this.task, command, this.reason ?? "cancel", this.timeoutMs);
  }
}
