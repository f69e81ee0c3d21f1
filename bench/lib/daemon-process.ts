import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { procSample, type ProcSample } from "./machine.ts";

const CTS_BIN = fileURLToPath(new URL("../../bin/cts.js", import.meta.url));
/** The installed CLI (dist/, after buildPackage()). */
export const BUILT_BIN = fileURLToPath(new URL("../../dist/cli/main.js", import.meta.url));

/** Builds dist/ (`npm run build`): the installed package's `cts`, which needs no tsx at start. */
export function buildPackage(): void {
  execFileSync("npm", ["run", "build"], { cwd: fileURLToPath(new URL("../..", import.meta.url)), stdio: "ignore" });
}

/**
 * What the built `cts`'s shebang (`#!/usr/bin/env -S NAME=value … node --flag …`) sets: the
 * environment assignments and node flags the installed command runs with.
 */
export function shebang(file: string): { env: Record<string, string>; flags: string[] } {
  const first = readFileSync(file, "utf8").split("\n", 1)[0] ?? "";
  const m = /^#!\S*env\s+(?:-S\s+)?(.*)$/.exec(first);
  const words = m?.[1]?.split(/\s+/).filter(Boolean) ?? [];
  const env: Record<string, string> = {};
  while (words[0] && /^[A-Z_][A-Z0-9_]*=/.test(words[0])) {
    const [name, ...value] = words.shift()!.split("=");
    env[name!] = value.join("=");
  }
  return { env, flags: words[0] === "node" ? words.slice(1) : [] };
}

/** A real `cts watch` process, its log lines and its /proc numbers. */
export interface DaemonProcess {
  pid: number;
  /** Log lines seen so far (bounded; the first and the most recent are kept). */
  lines(): string[];
  /** Resolves at the first log line matching `re` after this call (or already seen, with `seen`). */
  waitForLine(re: RegExp, timeoutMs: number, opts?: { seen?: boolean }): Promise<{ line: string; t: number }>;
  /** Counts log lines matching `re` so far. */
  count(re: RegExp): number;
  sample(): ProcSample;
  /** Sends a signal (e.g. SIGUSR2 for a heap snapshot with --heapsnapshot-signal). */
  signal(sig: NodeJS.Signals): void;
  /** SIGTERM, then SIGKILL after `graceMs`. */
  stop(graceMs?: number): Promise<void>;
}

/**
 * Starts `cts watch --no-buffer --config <file>`: from the sources (`node bin/cts.js`, tsx compiles
 * at start) or, with `built`, the package's `dist/cli/main.js` with its shebang's node flags (the
 * command an installed cts runs; call buildPackage() first).
 */
export function startDaemonProcess(configFile: string, opts: { nodeArgs?: string[]; cwd?: string; built?: boolean; /** Keep the config's buffer periods (default: `--no-buffer`). */ buffer?: boolean } = {}): DaemonProcess {
  // Under --cpu-prof (the runner's profile re-run) the daemon is profiled into the same folder.
  const nodeArgs = [...process.execArgv.filter((a) => a.startsWith("--cpu-prof")), ...(opts.built ? shebang(BUILT_BIN).flags : []), ...(opts.nodeArgs ?? [])];
  const child: ChildProcess = spawn(process.execPath, [...nodeArgs, opts.built ? BUILT_BIN : CTS_BIN, "watch", ...(opts.buffer ? [] : ["--no-buffer"]), "--config", configFile, "--log-level", "info", "--api-port", "0"], {
    stdio: ["ignore", "pipe", "pipe"],
    ...(opts.cwd ? { cwd: opts.cwd } : {}),
    ...(opts.built ? { env: { ...process.env, ...shebang(BUILT_BIN).env } } : {}),
  });
  const head: string[] = [];
  const tail: string[] = [];
  const counters: Array<{ re: RegExp; n: number }> = [];
  const waiters = new Set<{ re: RegExp; resolve: (v: { line: string; t: number }) => void }>();
  let buf = "";
  const onData = (d: Buffer) => {
    buf += d.toString("utf8");
    let i: number;
    while ((i = buf.indexOf("\n")) >= 0) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      const t = performance.now();
      if (head.length < 200) head.push(line);
      else {
        tail.push(line);
        if (tail.length > 300) tail.shift();
      }
      for (const c of counters) if (c.re.test(line)) c.n++;
      for (const w of [...waiters]) {
        if (w.re.test(line)) {
          waiters.delete(w);
          w.resolve({ line, t });
        }
      }
    }
  };
  child.stdout!.on("data", onData);
  child.stderr!.on("data", onData);
  const all = () => [...head, ...tail];
  return {
    pid: child.pid!,
    lines: all,
    waitForLine(re, timeoutMs, opts = {}) {
      if (opts.seen) {
        const found = all().find((l) => re.test(l));
        if (found) return Promise.resolve({ line: found, t: performance.now() });
      }
      return new Promise((resolve, reject) => {
        const w = {
          re,
          resolve: (v: { line: string; t: number }) => {
            clearTimeout(timer);
            resolve(v);
          },
        };
        const timer = setTimeout(() => {
          waiters.delete(w);
          reject(new Error(`the daemon printed no line matching ${re} within ${timeoutMs / 1000} s. Last lines:\n${tail.slice(-15).join("\n") || head.slice(-15).join("\n")}`));
        }, timeoutMs);
        waiters.add(w);
        if (child.exitCode !== null) reject(new Error(`the daemon exited with ${child.exitCode}:\n${all().slice(-20).join("\n")}`));
      });
    },
    count(re) {
      let c = counters.find((x) => x.re.source === re.source);
      if (!c) {
        c = { re, n: all().filter((l) => re.test(l)).length };
        counters.push(c);
      }
      return c.n;
    },
    sample: () => procSample(child.pid!),
    signal: (sig) => void child.kill(sig),
    async stop(graceMs = 15_000) {
      if (child.exitCode !== null || child.signalCode) return;
      const exited = new Promise((r) => child.once("exit", r));
      child.kill("SIGTERM");
      const t = setTimeout(() => child.kill("SIGKILL"), graceMs);
      await exited;
      clearTimeout(t);
    },
  };
}
