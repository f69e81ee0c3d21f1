import { spawn, type ChildProcess, type SpawnOptions } from "node:child_process";
import { createWriteStream, type WriteStream } from "node:fs";

/** A long-running child the demo started (Consul, nginx, the cts daemon). */
export interface Managed {
  /** Short name for messages ("consul", "nginx", "cts"). */
  name: string;
  child: ChildProcess;
  /** Everything it printed, for failure messages. */
  output(): string;
  /** Resolves when the process has exited. */
  exited: Promise<void>;
  /** SIGTERM (or `signal`) to its process group, SIGKILL to the group after `graceMs`; resolves once gone. */
  stop(signal?: NodeJS.Signals, graceMs?: number): Promise<void>;
}

// Every group still running, so even an unexpected exit of the driver leaves no process behind.
const live = new Set<number>();
let exitHook = false;

function signalGroup(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(-pid, sig);
  } catch {
    /* already gone */
  }
}

/**
 * Starts a command in its own process group. The group is what Ctrl-C must NOT reach directly:
 * the driver stops children itself, in order (daemon before nginx before Consul), and the group
 * also catches grandchildren (nginx workers, Terraform and its provisioner shells).
 */
export function startManaged(name: string, command: string, args: string[], opts: SpawnOptions & { logFile?: string; onLine?: (line: string) => void } = {}): Managed {
  const { logFile, onLine, ...spawnOpts } = opts;
  const child = spawn(command, args, { ...spawnOpts, detached: true, stdio: ["ignore", "pipe", "pipe"] });
  if (!exitHook) {
    exitHook = true;
    process.once("exit", () => {
      for (const pid of live) signalGroup(pid, "SIGKILL");
    });
  }
  if (child.pid !== undefined) live.add(child.pid);
  let text = "";
  let partial = "";
  const log: WriteStream | undefined = logFile ? createWriteStream(logFile, { flags: "a" }) : undefined;
  const take = (chunk: Buffer) => {
    const s = chunk.toString("utf8");
    text = (text + s).slice(-200_000);
    log?.write(s);
    if (!onLine) return;
    const lines = (partial + s).split("\n");
    partial = lines.pop() ?? "";
    for (const line of lines) onLine(line);
  };
  child.stdout!.on("data", take);
  child.stderr!.on("data", take);
  const exited = new Promise<void>((resolve) => {
    child.once("error", () => resolve());
    child.once("exit", () => resolve());
  }).then(
    () =>
      new Promise<void>((resolve) => {
        if (child.pid !== undefined) live.delete(child.pid);
        if (log) log.end(() => resolve());
        else resolve();
      }),
  );
  const running = () => child.exitCode === null && child.signalCode === null;
  return {
    name,
    child,
    output: () => text,
    exited,
    async stop(signal: NodeJS.Signals = "SIGTERM", graceMs = 10_000) {
      const pid = child.pid;
      if (pid !== undefined && running()) {
        // The leader only: it stops its own children (nginx workers, Terraform) gracefully.
        try {
          process.kill(pid, signal);
        } catch {
          /* gone */
        }
        const timer = setTimeout(() => signalGroup(pid, "SIGKILL"), graceMs);
        await exited;
        clearTimeout(timer);
      }
      // Whatever the leader left in its group (an orphaned worker or shell) goes too.
      if (pid !== undefined) signalGroup(pid, "SIGKILL");
      await exited;
    },
  };
}

/** Waits until `check` returns a truthy value; the error names `what` and the last failure. */
export async function waitUntil<T>(what: string, check: () => Promise<T | undefined | false> | T | undefined | false, timeoutMs = 30_000, everyMs = 100): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await check();
      if (v) return v;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${last instanceof Error ? last.message : String(last)}` : ""}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
