import { spawn, type ChildProcess } from "node:child_process";
import { fencedCancel } from "../driver/types.ts";

/** How one Terraform command is run. */
export interface ProcessOptions {
  cwd: string;
  /** The complete environment (nothing is inherited on top of it). */
  env: Record<string, string>;
  /** Aborting sends SIGINT to the command's process group, then SIGKILL after `killGraceMs` (sooner, or at once, for a `FencedCancel` reason). */
  signal: AbortSignal;
  killGraceMs: number;
  onStdout: (line: string) => void;
  onStderr: (line: string) => void;
  /** Told the process group id when the command starts and again when it ended (reaper, group file). */
  track?: { add(pgid: number): void; remove(pgid: number): void };
}

/** How a command ended. */
export interface ProcessResult {
  /** Exit code, or undefined when a signal ended it or it never started. */
  exitCode: number | undefined;
  /** True when the signal fired while the command ran. */
  aborted: boolean;
  /** Why the command did not start (binary missing, not executable…). */
  spawnError?: Error;
}

// Groups of commands still running, so an exiting daemon does not leave Terraform orphaned.
const liveGroups = new Set<number>();
let exitHookInstalled = false;

/** Adds a long-lived process group of ours (a warm provider) to the ones ended when this process exits. */
export function rememberLiveGroup(pgid: number): void {
  installExitHook();
  liveGroups.add(pgid);
}

/** Forgets a group `rememberLiveGroup` added, once it is gone. */
export function forgetLiveGroup(pgid: number): void {
  liveGroups.delete(pgid);
}

/** Sends `sig` to every process of the group `pid` leads; a group already gone is not an error. */
export function signalGroup(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(-pid, sig);
  } catch {
    /* the group is already gone */
  }
}

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  // SIGTERM, not SIGKILL: Terraform then stops gracefully, writes its state and releases the lock.
  process.once("exit", () => {
    for (const pid of liveGroups) signalGroup(pid, "SIGTERM");
  });
}

/**
 * Calls `onLine` with each line of a stream (newline and a trailing `\r` removed; blank lines
 * kept; a last line without newline delivered at the end). Returns the function that flushes it.
 */
export function lineSplitter(onLine: (line: string) => void): { push(chunk: string): void; end(): void } {
  let rest = "";
  const emit = (line: string) => onLine(line.endsWith("\r") ? line.slice(0, -1) : line);
  return {
    push(chunk) {
      let from = 0;
      let i: number;
      const text = rest + chunk;
      while ((i = text.indexOf("\n", from)) >= 0) {
        emit(text.slice(from, i));
        from = i + 1;
      }
      rest = text.slice(from);
    },
    end() {
      if (rest) emit(rest);
      rest = "";
    },
  };
}

/**
 * Starts `binary` in a process group of its own (detached), output piped, no stdin: the one way the
 * driver starts a process (Terraform's commands through `runProcess`, warm providers through
 * provider-process.ts); the caller tells the reaper and the group file its group.
 */
export function startInGroup(binary: string, args: readonly string[], opts: { cwd: string; env: Record<string, string> }): ChildProcess {
  return spawn(binary, args, { cwd: opts.cwd, env: opts.env, detached: true, stdio: ["ignore", "pipe", "pipe"] });
}

/**
 * Runs one command in its own process group. The group matters for cancellation: provisioners
 * such as local-exec start shells whose children Terraform does not kill, so we signal the whole
 * group (provider plugins ignore SIGINT by design and are stopped by Terraform itself).
 *
 * node:child_process directly, not execa: this is the hot path of every run, and execa's option
 * normalization and stream transforms cost the daemon ~5 ms of CPU per command (measured with the
 * lean-daemon benchmark); everything needed here (own group, exact env, line callbacks) is small.
 */
export async function runProcess(binary: string, args: readonly string[], opts: ProcessOptions): Promise<ProcessResult> {
  if (opts.signal.aborted) return { exitCode: undefined, aborted: true };
  installExitHook();
  let child: ChildProcess;
  try {
    child = startInGroup(binary, args, opts);
  } catch (err) {
    // Most start failures arrive as an "error" event; a few (EINVAL…) are thrown right here.
    return { exitCode: undefined, aborted: false, spawnError: err instanceof Error ? err : new Error(String(err)) };
  }
  const pid = child.pid;
  const ended = new Promise<{ code: number | null; spawnError?: Error }>((resolve) => {
    // A command that could not start emits only "error" (and no pid); one that ran, "close" once
    // it exited and both pipes are drained, so every line has been delivered by then.
    child.once("error", (err) => {
      if (pid === undefined) resolve({ code: null, spawnError: err });
    });
    child.once("close", (code) => resolve({ code }));
  });
  for (const [stream, onLine] of [
    [child.stdout!, opts.onStdout],
    [child.stderr!, opts.onStderr],
  ] as const) {
    const lines = lineSplitter(onLine);
    stream.setEncoding("utf8");
    stream.on("data", (chunk: string) => lines.push(chunk));
    stream.once("end", () => lines.end());
  }
  let aborted = false;
  let killTimer: NodeJS.Timeout | undefined;
  const onAbort = () => {
    if (pid === undefined || aborted) return;
    aborted = true;
    // A fenced run must be gone before another instance may hold its lock: a graceful stop (which
    // lets Terraform finish what it is doing and save state) only when there is time for it.
    const fenced = fencedCancel(opts.signal.reason);
    const grace = fenced ? Math.min(opts.killGraceMs, Math.floor(fenced.killBy - performance.now())) : opts.killGraceMs;
    if (grace <= 0) return signalGroup(pid, "SIGKILL");
    signalGroup(pid, "SIGINT");
    killTimer = setTimeout(() => signalGroup(pid, "SIGKILL"), grace);
  };
  if (pid !== undefined) {
    liveGroups.add(pid);
    opts.track?.add(pid);
  }
  opts.signal.addEventListener("abort", onAbort, { once: true });
  try {
    const result = await ended;
    if (result.spawnError) return { exitCode: undefined, aborted, spawnError: result.spawnError };
    return { exitCode: result.code ?? undefined, aborted };
  } finally {
    opts.signal.removeEventListener("abort", onAbort);
    clearTimeout(killTimer);
    if (pid !== undefined) {
      liveGroups.delete(pid);
      // After a cancellation, whatever the interrupted command left in its group goes too.
      if (aborted) signalGroup(pid, "SIGKILL");
      opts.track?.remove(pid);
    }
  }
}
