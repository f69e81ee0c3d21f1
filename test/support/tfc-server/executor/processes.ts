import { spawn } from "node:child_process";

/** How a command ended and what it printed. */
export interface CommandResult {
  exitCode: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Every tofu this server starts runs in its own process group, so providers and provisioner
 * commands (children of tofu) are reached too: abort sends SIGINT to the group, then SIGKILL
 * after a grace period; `killAll` (server stop, test process exit) leaves nothing behind.
 */
export class ProcessGroups {
  private readonly live = new Set<number>();
  private readonly onExit = () => this.killAll();

  constructor(private readonly graceMs = 3000) {
    process.on("exit", this.onExit);
  }

  /** Process group ids of the commands running now. */
  groups(): number[] {
    return [...this.live];
  }

  /** Runs a command in a new process group; never throws for a non-zero exit. */
  run(file: string, args: string[], opts: { cwd: string; env: Record<string, string>; signal: AbortSignal; onOutput: (text: string) => void }): Promise<CommandResult> {
    return new Promise((resolve, reject) => {
      if (opts.signal.aborted) return resolve({ exitCode: null, stdout: "", stderr: "" });
      const child = spawn(file, args, { cwd: opts.cwd, env: opts.env, detached: true, stdio: ["ignore", "pipe", "pipe"] });
      const pid = child.pid;
      let stdout = "";
      let stderr = "";
      let killTimer: NodeJS.Timeout | undefined;
      const abort = () => {
        if (pid === undefined) return;
        signalGroup(pid, "SIGINT");
        killTimer = setTimeout(() => signalGroup(pid, "SIGKILL"), this.graceMs);
      };
      if (pid !== undefined) this.live.add(pid);
      opts.signal.addEventListener("abort", abort, { once: true });
      child.stdout.setEncoding("utf8").on("data", (d: string) => ((stdout += d), opts.onOutput(d)));
      child.stderr.setEncoding("utf8").on("data", (d: string) => ((stderr += d), opts.onOutput(d)));
      child.on("error", (err) => {
        opts.signal.removeEventListener("abort", abort);
        if (pid !== undefined) this.live.delete(pid);
        reject(err);
      });
      child.on("close", (exitCode) => {
        opts.signal.removeEventListener("abort", abort);
        clearTimeout(killTimer);
        if (pid !== undefined) {
          // An aborted tofu may leave providers or provisioner commands behind in its group.
          if (opts.signal.aborted) signalGroup(pid, "SIGKILL");
          this.live.delete(pid);
        }
        resolve({ exitCode, stdout, stderr });
      });
    });
  }

  /** SIGKILL to every group still running, and stop watching the process's exit. */
  killAll(): void {
    for (const pid of this.live) signalGroup(pid, "SIGKILL");
  }

  /** Detaches the process-exit hook (after the server stopped). */
  close(): void {
    this.killAll();
    process.off("exit", this.onExit);
  }
}

function signalGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    /* the group is gone already */
  }
}
