import { spawn, type ChildProcess } from "node:child_process";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { FIXTURE_TASKS, PUBLIC_API } from "./cts.ts";
import { tools } from "./tools.ts";

/** The CLI entry point, as users run it. */
export const CTS_BIN = fileURLToPath(new URL("../../bin/cts.js", import.meta.url));

/** Options of a spawned `cts watch`. */
export interface CtsProcessOptions {
  /** Extra arguments after `watch --config <file>` (e.g. `--api-port 0`, `--reset-storage`). */
  args?: string[];
  /** Extra environment. */
  env?: Record<string, string>;
  /** A name for failure messages (default: the config file). */
  name?: string;
}

/** A `cts watch` child process with its output captured. */
export interface CtsProcess {
  readonly name: string;
  /** Everything it printed so far (stdout and stderr interleaved). */
  logs(): string;
  /** Log lines printed after `from` characters of output. */
  linesSince(from: number): string[];
  /** The current output length, to look for lines printed after this point. */
  mark(): number;
  /** Waits until a line printed after `from` matches; returns the line and when it arrived. A signal stops the wait. */
  waitForLine(pattern: RegExp, timeoutMs?: number, from?: number, signal?: AbortSignal): Promise<{ line: string; at: number }>;
  /** Process id (undefined once it exited). */
  readonly pid: number | undefined;
  /** Whether it is still running. */
  running(): boolean;
  /** Resolves with the exit code (or the signal name) once it exits. */
  exited(): Promise<number | string>;
  /** `kill -9`: no cleanup at all, as a crash. */
  kill9(): Promise<void>;
  /** SIGTERM; waits for the exit (up to `timeoutMs`, then SIGKILL) and returns the exit code. */
  terminate(timeoutMs?: number): Promise<number | string>;
  /** Starts the same command again (after it exited); output keeps accumulating. */
  restart(): Promise<void>;
}

/** Spawns `node bin/cts.js watch --config <file> …`. Stop it in the test's `after`/`finally`. */
export function startCtsProcess(configFile: string, opts: CtsProcessOptions = {}): CtsProcess {
  let output = "";
  // When each chunk arrived, so a test can tell when a line was printed (failover timings).
  const arrivals: Array<{ offset: number; at: number }> = [];
  let child: ChildProcess;
  let exit: Promise<number | string>;

  const launch = () => {
    child = spawn(process.execPath, [CTS_BIN, "watch", "--config", configFile, ...(opts.args ?? [])], {
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, ...opts.env },
    });
    const onData = (d: Buffer) => {
      arrivals.push({ offset: output.length, at: Date.now() });
      output += d.toString("utf8");
    };
    child.stdout!.on("data", onData);
    child.stderr!.on("data", onData);
    exit = new Promise((resolve) => child.once("exit", (code, signal) => resolve(code ?? signal ?? "unknown")));
  };
  launch();

  const arrivalOf = (offset: number) => {
    let at = Date.now();
    for (let i = arrivals.length - 1; i >= 0; i--) {
      if (arrivals[i]!.offset <= offset) {
        at = arrivals[i]!.at;
        break;
      }
    }
    return at;
  };

  const running = () => child.exitCode === null && child.signalCode === null;
  const self: CtsProcess = {
    name: opts.name ?? configFile,
    logs: () => output,
    mark: () => output.length,
    linesSince: (from) => output.slice(from).split("\n").filter(Boolean),
    get pid() {
      return running() ? child.pid : undefined;
    },
    running,
    exited: () => exit,
    async waitForLine(pattern, timeoutMs = 30_000, from = 0, signal) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        let offset = from;
        for (const line of output.slice(from).split("\n")) {
          if (pattern.test(line)) return { line, at: arrivalOf(offset) };
          offset += line.length + 1;
        }
        const tail = `\n--- ${self.name} output (last 4000 chars) ---\n${output.slice(-4000)}`;
        if (signal?.aborted) throw new Error(`stopped waiting for ${self.name} to print ${pattern}`);
        if (!running()) throw new Error(`${self.name} exited (${child.exitCode ?? child.signalCode}) before printing ${pattern}${tail}`);
        if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${self.name} to print ${pattern}${tail}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    },
    async kill9() {
      if (!running()) return;
      child.kill("SIGKILL");
      await exit;
    },
    async terminate(timeoutMs = 20_000) {
      if (!running()) return exit;
      child.kill("SIGTERM");
      const t = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
      const code = await exit;
      clearTimeout(t);
      return code;
    },
    async restart() {
      if (running()) throw new Error(`${self.name} is still running`);
      output += `\n--- restarted ---\n`;
      launch();
    },
  };
  return self;
}

/** Options of a generated high-availability cts.config.ts. */
export interface HaConfigOptions {
  consulAddress: string;
  id: string;
  cluster: string;
  /** Session TTL (tests use a few seconds; the Consul agent must set session_ttl_min). */
  sessionTtl: string;
  /** TypeScript expressions for the tasks (fixture classes from test/fixtures/tasks.ts and ha-tasks.ts). */
  tasks: string[];
  /** API port (0 = free port). */
  apiPort?: number;
  /** Cluster mode and settle time (shared mode). */
  mode?: "leader" | "shared";
  settle?: string;
  /** More top-level fields as TypeScript text. */
  extra?: string;
}

/** Writes `<dir>/cts.config.ts` for one instance of an HA cluster (its own working dir, shared state in Consul). */
export async function writeHaConfig(dir: string, o: HaConfigOptions): Promise<string> {
  const haTasks = fileURLToPath(new URL("../fixtures/ha-tasks.ts", import.meta.url));
  const t = tools();
  await mkdir(dir, { recursive: true });
  const file = join(dir, "cts.config.ts");
  await writeFile(
    file,
    `import { defineConfig, ModuleTask, services } from ${JSON.stringify(PUBLIC_API)};
void ModuleTask; void services;
import { MemberList, SlowMembers, GuardedPool } from ${JSON.stringify(FIXTURE_TASKS)};
import { AppendMembers, OwnerLog } from ${JSON.stringify(haTasks)};
void MemberList; void SlowMembers; void GuardedPool; void AppendMembers; void OwnerLog;
export default defineConfig({
  id: ${JSON.stringify(o.id)},
  consul: { address: ${JSON.stringify(o.consulAddress)} },
  driver: { terraform: { binary: ${JSON.stringify(t.tofu)}, cliConfigFile: ${JSON.stringify(t.cliConfig)}, workingDir: ${JSON.stringify(join(dir, "sync-tasks"))}, log: true } },
  api: { port: ${o.apiPort ?? 0} },
  highAvailability: { cluster: { name: ${JSON.stringify(o.cluster)}, ${o.mode ? `mode: ${JSON.stringify(o.mode)}, ` : ""}${o.settle ? `settle: ${JSON.stringify(o.settle)}, ` : ""}storage: { sessionTtl: ${JSON.stringify(o.sessionTtl)} } } },
  ${o.extra ?? ""}
  tasks: [${o.tasks.join(", ")}],
});
`,
  );
  return file;
}

/** The first of `procs` to print a line matching `pattern` (after each one's mark); the other waits stop. */
export async function firstToPrint(procs: CtsProcess[], pattern: RegExp, timeoutMs: number, marks?: Map<string, number>): Promise<{ p: CtsProcess; line: string; at: number }> {
  const ac = new AbortController();
  try {
    return await Promise.any(procs.map((p) => p.waitForLine(pattern, timeoutMs, marks?.get(p.name) ?? 0, ac.signal).then((found) => ({ p, ...found }))));
  } catch (err) {
    throw err instanceof AggregateError ? new Error(err.errors.map((e: Error) => e.message).join("\n\n")) : err;
  } finally {
    ac.abort();
  }
}
