import { fileURLToPath } from "node:url";
import { startManaged, waitUntil, type Managed } from "./processes.ts";

/** The `cts watch` bin, started as a user would start it. */
const CTS_BIN = fileURLToPath(new URL("../../bin/cts.js", import.meta.url));

/** One task run as the demo shows it (from the API's events, or from the daemon's log). */
export interface RunEvent {
  /** ISO time the run ended (log) or started (API). */
  time: string;
  success: boolean;
  /** applied | no-op | failed … */
  outcome: string;
  /** add/change/destroy, when Terraform ran. */
  changes?: { add: number; change: number; destroy: number };
  error?: string;
}

/** The running daemon. */
export interface Daemon {
  process: Managed;
  /** http://127.0.0.1:<port> of its HTTP API. */
  apiUrl: string;
  /** Whether the API answered `/v1/health` (it is being built; until then events come from the log). */
  apiServed(): Promise<boolean>;
  /** A task's runs, oldest first: the API's events (CTS keeps 5) when it serves them, else the daemon's log. */
  events(task: string): Promise<{ from: "api" | "log"; events: RunEvent[] }>;
  /** Waits until the task has recorded `count` runs in total. */
  waitForRuns(task: string, count: number, timeoutMs?: number): Promise<RunEvent[]>;
  /** Runs seen in the log (used as fallback and to count runs regardless of the API's limit of 5). */
  logEvents(task: string): RunEvent[];
  stop(): Promise<void>;
}

// `ctrl: task 'web-lb': applied task=web-lb add=1 change=0 destroy=1` and `ctrl: task 'web-lb': <error>`
// (at ERROR); the component was once written `(ctrl)`.
const RUN_LINE = /^(\S+) \[(INFO|ERROR)\]\s+(?:\(ctrl\)|ctrl:) task '([^']+)': (.*)$/;
const OUTCOMES = new Set(["applied", "no-op", "cancelled"]);

/** Turns one daemon log line into a run event, or undefined when it is not one. */
export function parseRunLine(line: string): { task: string; event: RunEvent } | undefined {
  const m = RUN_LINE.exec(line);
  if (!m) return undefined;
  const [, time, level, task, rest] = m as unknown as [string, string, string, string, string];
  if (level === "INFO") {
    const [outcome, ...fields] = rest.split(" ");
    if (!outcome || !OUTCOMES.has(outcome)) return undefined;
    const n = (k: string) => Number(fields.find((f) => f.startsWith(`${k}=`))?.slice(k.length + 1) ?? NaN);
    const changes = { add: n("add"), change: n("change"), destroy: n("destroy") };
    return { task, event: { time, success: true, outcome, ...(Number.isNaN(changes.add) ? {} : { changes }) } };
  }
  // Warnings about watching and retries are not runs; an ERROR from ctrl for a task is a failed run.
  return { task, event: { time, success: false, outcome: "failed", error: rest } };
}

/** Starts `cts watch --config <configFile>` with `env` on top of ours; its log goes to `logFile`. */
export function startDaemon(opts: { configFile: string; env: Record<string, string>; logFile: string; apiPort: number; echo?: (line: string) => void }): Daemon {
  const seen = new Map<string, RunEvent[]>();
  const proc = startManaged("cts", process.execPath, [CTS_BIN, "watch", "--config", opts.configFile], {
    env: { ...process.env, ...opts.env },
    logFile: opts.logFile,
    onLine: (line) => {
      opts.echo?.(line);
      const run = parseRunLine(line);
      if (!run) return;
      const list = seen.get(run.task) ?? [];
      list.push(run.event);
      seen.set(run.task, list);
    },
  });
  const apiUrl = `http://127.0.0.1:${opts.apiPort}`;
  let served: boolean | undefined;
  const apiServed = async () => {
    if (served) return true;
    try {
      served = (await fetch(`${apiUrl}/v1/health`, { signal: AbortSignal.timeout(1_000) })).ok;
    } catch {
      served = false;
    }
    return served;
  };
  const logEvents = (task: string) => [...(seen.get(task) ?? [])];
  const exitedEarly = () => {
    if (proc.child.exitCode !== null) throw new Error(`cts watch exited with code ${proc.child.exitCode}:\n${proc.output().slice(-4_000)}`);
  };
  return {
    process: proc,
    apiUrl,
    apiServed,
    async events(task) {
      if (await apiServed()) {
        try {
          const res = await fetch(`${apiUrl}/v1/status/tasks/${encodeURIComponent(task)}?include=events`, { signal: AbortSignal.timeout(2_000) });
          if (res.ok) {
            const body = (await res.json()) as Record<string, { events?: Array<{ start_time: string; success: boolean; outcome?: string; changes?: RunEvent["changes"]; error?: { message: string } | null }> }>;
            const events = body[task]?.events ?? [];
            // The API lists newest first; the demo prints oldest first, like a log.
            const list = events
              .map((e) => ({ time: e.start_time, success: e.success, outcome: e.outcome ?? (e.success ? "applied" : "failed"), ...(e.changes ? { changes: e.changes } : {}), ...(e.error ? { error: e.error.message } : {}) }))
              .reverse();
            return { from: "api" as const, events: list };
          }
        } catch {
          /* fall back to the log */
        }
      }
      return { from: "log" as const, events: logEvents(task) };
    },
    waitForRuns: (task, count, timeoutMs = 60_000) =>
      waitUntil(
        `task '${task}' to record ${count} run(s) (seen: ${logEvents(task).length})`,
        () => {
          exitedEarly();
          const list = logEvents(task);
          return list.length >= count ? list : undefined;
        },
        timeoutMs,
      ),
    logEvents,
    // SIGTERM: the daemon stops watching, lets Terraform finish or cancels it, then exits.
    stop: () => proc.stop("SIGTERM", 15_000),
  };
}
