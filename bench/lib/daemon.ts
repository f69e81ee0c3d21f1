import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { loadConfig, type LoadedConfig } from "../../src/config/load.ts";
import { createConsulClient } from "../../src/consul/client.ts";
import { consulEnvForTerraform } from "../../src/consul/connection.ts";
import { createLogger } from "../../src/log/logger.ts";
import { consulConnectionFor } from "../../src/config/consul-connection.ts";
import type { Controller } from "../../src/runtime/controller.ts";
import { createController } from "../../src/daemon/compose.ts";
import { workerSynthesizer, type Synthesizer } from "../../src/synth/synthesizer.ts";
import { workingRoot } from "../../src/synth/paths.ts";
import { createTerraformDriver } from "../../src/terraform/driver.ts";
import type { WarmProcessInfo } from "../../src/terraform/warm-pool.ts";
import type { LocalTerraformDriver, RunResult, TerraformDriver } from "../../src/terraform/types.ts";
import { createCatalogReader, createWatcher, type ConsulWatcher } from "../../src/watch/watcher.ts";

/** Something that happened to a task, with a performance.now() timestamp. */
export interface Mark {
  task: string;
  /** synth-start/synth-end: the synthesizer; handoff: the driver got the JSON; applied: the driver finished; outcome: the run ended (log line). */
  kind: "synth-start" | "synth-end" | "handoff" | "applied" | "outcome";
  t: number;
  json?: string;
  /** handoff/applied: the synthesis of this run. */
  synth?: { start: number; end: number };
  /** applied: whether the driver ran init first. */
  initialized?: boolean;
  /** outcome: applied | no-op | failed | cancelled … */
  outcome?: string;
}

interface Waiter {
  task: string;
  kind: Mark["kind"];
  pred: (m: Mark) => boolean;
  resolve: (m: Mark) => void;
  reject: (e: Error) => void;
  timer: NodeJS.Timeout;
}

/** Collects marks and lets a benchmark wait for the next matching one. */
export class Recorder {
  private readonly waiters = new Set<Waiter>();
  private readonly lastSynth = new Map<string, { start: number; end: number }>();
  /** Number of marks per kind, for sanity checks. */
  readonly counts = new Map<string, number>();

  push(mark: Mark): void {
    this.counts.set(mark.kind, (this.counts.get(mark.kind) ?? 0) + 1);
    if (mark.kind === "synth-start") this.lastSynth.set(mark.task, { start: mark.t, end: NaN });
    if (mark.kind === "synth-end") {
      const s = this.lastSynth.get(mark.task);
      if (s) s.end = mark.t;
    }
    if (mark.kind === "handoff" || mark.kind === "applied") mark.synth = this.lastSynth.get(mark.task);
    for (const w of [...this.waiters]) {
      if (w.task !== mark.task || w.kind !== mark.kind) continue;
      let ok = false;
      try {
        ok = w.pred(mark);
      } catch {
        ok = false;
      }
      if (!ok) continue;
      this.waiters.delete(w);
      clearTimeout(w.timer);
      w.resolve(mark);
    }
  }

  /** The next mark of `kind` for `task` that satisfies `pred`, arriving after this call. */
  next(task: string, kind: Mark["kind"], pred: (m: Mark) => boolean = () => true, timeoutMs = 30_000): Promise<Mark> {
    return new Promise((resolve, reject) => {
      const w: Waiter = {
        task,
        kind,
        pred,
        resolve,
        reject,
        timer: setTimeout(() => {
          this.waiters.delete(w);
          reject(new Error(`timed out after ${timeoutMs} ms waiting for a '${kind}' of task '${task}'`));
        }, timeoutMs),
      };
      this.waiters.add(w);
    });
  }

  /** Rejects every pending wait (on shutdown). */
  cancelAll(): void {
    for (const w of this.waiters) {
      clearTimeout(w.timer);
      w.reject(new Error("benchmark stopped"));
    }
    this.waiters.clear();
  }
}

/** Wraps a synthesizer so every synthesis is timed. */
export function timedSynthesizer(inner: Synthesizer, rec: Recorder): Synthesizer {
  return {
    async synth(ref, input, ctx) {
      const task = ref.kind === "config" ? ref.name : ref.spec.name;
      rec.push({ task, kind: "synth-start", t: performance.now() });
      try {
        return await inner.synth(ref, input, ctx);
      } finally {
        rec.push({ task, kind: "synth-end", t: performance.now() });
      }
    },
    close: () => inner.close(),
  };
}

const DONE: RunResult = { changesPresent: true, summary: { add: 0, change: 1, destroy: 0 }, output: "" };

/** A driver that only records the hand-off: the trigger-latency benchmark measures up to here. */
export function recordingDriver(root: string, rec: Recorder): TerraformDriver & { taskDir(task: string): string } {
  const record = (task: string, json: string) => {
    rec.push({ task, kind: "handoff", t: performance.now(), json });
    return Promise.resolve(DONE);
  };
  return {
    apply: (ws) => record(ws.task, ws.json),
    plan: (ws) => record(ws.task, ws.json),
    destroy: (ws) => record(ws.task, ws.json),
    taskDir: (task) => {
      const dir = join(root, task);
      mkdirSync(dir, { recursive: true });
      return dir;
    },
  };
}

/** The real driver, timed: handoff when apply is called, applied when it returns. */
export function timedDriver(inner: LocalTerraformDriver, rec: Recorder): LocalTerraformDriver {
  const wrap =
    (op: "apply" | "plan" | "destroy"): TerraformDriver["apply"] =>
    async (ws, opts) => {
      rec.push({ task: ws.task, kind: "handoff", t: performance.now(), json: ws.json });
      const res = await inner[op](ws, opts);
      rec.push({ task: ws.task, kind: "applied", t: performance.now(), json: ws.json, initialized: res.initialized === true });
      return res;
    };
  // The driver is a class: its methods live on the prototype, so they are handed on one by one.
  return {
    apply: wrap("apply"),
    plan: wrap("plan"),
    destroy: wrap("destroy"),
    version: () => inner.version(),
    hungCommands: () => inner.hungCommands(),
    warmProcesses: () => inner.warmProcesses(),
    coolDown: (task) => inner.coolDown(task),
    close: () => inner.close(),
    taskDir: (task) => inner.taskDir(task),
    planToApply: (ws, opts) => inner.planToApply(ws, opts),
    applyPlan: (ws, ref, opts) => inner.applyPlan(ws, ref, opts),
    discardPlan: (task, ref) => inner.discardPlan(task, ref),
  };
}

/** The daemon's parts, wired as src/daemon/compose.ts wires them, with timing taps. */
export interface BenchDaemon {
  loaded: LoadedConfig;
  controller: Controller;
  watcher: ConsulWatcher;
  rec: Recorder;
  /** Warnings and errors the daemon logged. */
  problems: string[];
  /** The real driver's warm provider processes (none with the recording driver). */
  warmProcesses(): WarmProcessInfo[];
  close(): Promise<void>;
}

/**
 * Starts the daemon in-process exactly as `cts watch --no-buffer` does (real Consul client, shared
 * blocking-query watcher, recycled worker synthesizer, work queue), with either the real Terraform
 * driver (timed) or a recording driver. Runs every task once, as the daemon does.
 */
export async function startBenchDaemon(configFile: string, opts: { driver: "fake" | "real"; warmProviders?: boolean }): Promise<BenchDaemon> {
  const loaded = await loadConfig(configFile);
  const rec = new Recorder();
  const problems: string[] = [];
  const log = createLogger({
    level: "info",
    write: (line) => {
      // Text lines read "… [INFO] ctrl: task 'x': applied …" (older builds: "(ctrl) task …").
      const m = /(?:\(ctrl\)|ctrl:) task '([^']+)': (applied|no-op|failed|cancelled|destroyed|planned)\b/.exec(line);
      if (m) rec.push({ task: m[1]!, kind: "outcome", t: performance.now(), outcome: m[2]! });
      if (/\[(WARN|ERROR)\]/.test(line) && problems.length < 50) problems.push(line);
    },
  });
  const connection = consulConnectionFor(loaded.config);
  const consul = createConsulClient(connection);
  const watcher = createWatcher(consul, { warn: (m) => log.warn(m) });
  const tf = loaded.config.driver?.terraform ?? {};
  const root = workingRoot(loaded.dir, tf.workingDir);
  const real =
    opts.driver === "fake"
      ? undefined
      : createTerraformDriver({
          binary: tf.binary ?? "tofu",
          workingDir: root,
          ...(tf.cliConfigFile ? { cliConfigFile: tf.cliConfigFile } : {}),
          pluginCacheDir: tf.pluginCacheDir ?? join(root, ".plugin-cache"),
          env: consulEnvForTerraform(connection),
          warmProviders: opts.warmProviders === true ? {} : false,
        });
  const driver = real ? timedDriver(real, rec) : recordingDriver(root, rec);
  const synthesizer = timedSynthesizer(workerSynthesizer(), rec);
  const controller = createController({
    loaded,
    reader: createCatalogReader(consul),
    driver,
    synthesizer,
    log: log.child("ctrl"),
    watcher,
    bufferOff: true,
    retries: 0,
  });
  await controller.watch();
  return {
    loaded,
    controller,
    watcher,
    rec,
    problems,
    warmProcesses: () => real?.warmProcesses() ?? [],
    async close() {
      rec.cancelAll();
      await controller.stop(5_000);
      watcher.close();
      consul.close();
      await real?.close();
    },
  };
}
