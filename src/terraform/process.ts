import { execa } from "execa";

/** How one Terraform command is run. */
export interface ProcessOptions {
  cwd: string;
  /** The complete environment (nothing is inherited on top of it). */
  env: Record<string, string>;
  /** Aborting sends SIGINT to the command's process group, then SIGKILL after `killGraceMs`. */
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
 * Runs one command in its own process group. The group matters for cancellation: provisioners
 * such as local-exec start shells whose children Terraform does not kill, so we signal the whole
 * group (provider plugins ignore SIGINT by design and are stopped by Terraform itself).
 */
export async function runProcess(binary: string, args: readonly string[], opts: ProcessOptions): Promise<ProcessResult> {
  if (opts.signal.aborted) return { exitCode: undefined, aborted: true };
  installExitHook();
  const child = execa(binary, args, {
    cwd: opts.cwd,
    env: opts.env,
    extendEnv: false,
    detached: true,
    cleanup: false,
    stdin: "ignore",
    reject: false,
    stripFinalNewline: true,
    // Generator transforms see one line at a time; yielding nothing keeps memory flat on long runs.
    stdout: function* (line: unknown) {
      opts.onStdout(String(line));
    },
    stderr: function* (line: unknown) {
      opts.onStderr(String(line));
    },
  });
  const pid = child.pid;
  let aborted = false;
  let killTimer: NodeJS.Timeout | undefined;
  const onAbort = () => {
    if (pid === undefined || aborted) return;
    aborted = true;
    signalGroup(pid, "SIGINT");
    killTimer = setTimeout(() => signalGroup(pid, "SIGKILL"), opts.killGraceMs);
  };
  if (pid !== undefined) {
    liveGroups.add(pid);
    opts.track?.add(pid);
  }
  opts.signal.addEventListener("abort", onAbort, { once: true });
  try {
    const result = await child;
    if (result.failed && result.exitCode === undefined && !result.signal && !aborted) {
      return { exitCode: undefined, aborted, spawnError: result.cause instanceof Error ? result.cause : new Error(result.shortMessage) };
    }
    return { exitCode: result.exitCode, aborted };
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
