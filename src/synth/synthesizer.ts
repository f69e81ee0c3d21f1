import type { Worker } from "node:worker_threads";
import { systemClock, unrefTimer, type Clock } from "../time/clock.ts";
import { CtsError, isErrorCode } from "../errors/cts-error.ts";
import type { AnyTaskInput, Task } from "../task/task.ts";
import type { Condition, TaskInputs } from "../task/conditions.ts";
import { ModuleTask } from "../task/module-task.ts";
import { moduleTaskFrom } from "../task/declaration.ts";
import type { ConfigDescription } from "../config/description.ts";
import { synthesizeTask, type SynthContext, type SynthResult } from "./synthesize.ts";
import { withTokenScope } from "./token-scope.ts";
import { isTaskClassRef, type TaskRef } from "./task-ref.ts";
import { newSynthWorker, takeEarlyWorker } from "./worker-start.ts";
import { knownSecrets } from "../secrets/redactor.ts";
import { userCode } from "../errors/user-frames.ts";
import { runPredicate, type PlanGuards, type PlanJson } from "../task/guards.ts";

/** A task's own guard predicate, if it has one. */
export function predicateReason(task: Task<Condition, TaskInputs> | undefined, plan: PlanJson): string | undefined {
  const guards = task?.guards as PlanGuards | false | undefined;
  return guards && typeof guards.check === "function" ? runPredicate(guards.check, plan) : undefined;
}

/** Turns a task and its input into Terraform JSON. */
export interface Synthesizer {
  synth(ref: TaskRef, input: AnyTaskInput, ctx: SynthContext): Promise<SynthResult>;
  /**
   * Runs the task's guard predicate (`guards.check`) over a plan where the task's code lives: the
   * reason to hold it, or undefined. A task without a predicate answers undefined.
   */
  checkPlan?(ref: TaskRef, plan: PlanJson): Promise<string | undefined>;
  /** Gets ready to synthesize `ref` soon (a worker synthesizer starts its worker); never fails. */
  prewarm?(ref: TaskRef): void;
  /** Keeps the worker (if any) warm instead of ending it after its idle period. */
  keepWarm?(warm: boolean): void;
  /** Frees the worker (if any). */
  close(): Promise<void>;
}

/** The module task a ref names, when it can be built on this thread without the config (else undefined). */
export function moduleTaskOf(ref: TaskRef): ModuleTask<Condition, TaskInputs> | undefined {
  if (ref.kind === "module") return new ModuleTask(ref.spec);
  return ref.module ? moduleTaskFrom(ref.module) : undefined;
}

/** Synthesizes on the calling thread (for `cts synth`, `once` and tests); each synthesis's tokens are forgotten after it. */
export function inProcessSynthesizer(lookup: (name: string) => Task<Condition, TaskInputs> | undefined): Synthesizer {
  return {
    async synth(ref, input, ctx) {
      const task = ref.kind === "module" ? new ModuleTask(ref.spec) : lookup(ref.name);
      if (!task) throw new CtsError("TASK_NOT_FOUND", "usage", `no task '${ref.kind === "config" ? ref.name : ref.spec.name}' in the config`);
      return withTokenScope(() => synthesizeTask(task, input, ctx));
    },
    async checkPlan(ref, plan) {
      return ref.kind === "config" ? predicateReason(lookup(ref.name), plan) : undefined;
    },
    async close() {},
  };
}

/** Options of the worker synthesizer. */
export interface WorkerSynthesizerOptions {
  /**
   * Replace the worker after this many syntheses (default 10,000): a safety net only. The tokens a
   * synthesis registers are forgotten after it (token-scope.ts), so the worker's heap stays flat.
   */
  maxSyntheses?: number;
  /**
   * Replace the worker when its heap grows past its own baseline by this many bytes (default
   * 128 MiB). The baseline is the heap after the first
   * synthesis, when the config and the bindings its task classes touch are loaded: a big provider
   * binding is part of the baseline, not a reason to recycle.
   */
  maxHeapGrowthBytes?: number;
  /**
   * End the worker after this long without a synthesis (default 2 min; `Infinity` keeps it warm):
   * a daemon whose tasks are quiet holds no CDKTF heap. The next trigger of a task class starts it
   * again (`prewarm`), during the task's buffer period.
   */
  idleMs?: number;
  /** The idle period's clock (default: the real one; tests pass a fake). */
  clock?: Clock;
}

interface Pending {
  resolve: (r: any) => void;
  reject: (e: unknown) => void;
}

/** The daemon's synthesizer: also loads a TypeScript config in its worker and describes it. */
export interface WorkerSynthesizer extends Synthesizer {
  /** Loads a config (a TypeScript file, or CTS files in merge order) in the worker, validated there, and returns it as plain data. */
  describe(configFile: string | string[]): Promise<ConfigDescription>;
  /** Ends the worker now (it starts again on the next task class to synthesize). */
  release(): Promise<void>;
  /**
   * Starts the worker for a task class and has it load the config and warm cdktf with a throwaway
   * synthesis, unless it runs already: called when a task's data changes, so the worker's start
   * overlaps the buffer period instead of delaying the run. Never fails (a failing config fails
   * the run that follows, with its error).
   */
  prewarm(ref: TaskRef): void;
  /** `true`: the worker never ends for being idle; `false`: it ends after the idle period again. */
  keepWarm(warm: boolean): void;
  /** How the worker has been doing: starts, recycles, its heap baseline and last heap size. */
  stats(): WorkerStats;
  recycled(): number;
  running(): boolean;
}

/** Figures of a worker synthesizer (for benchmarks, metrics and tests). */
export interface WorkerStats {
  /** Workers started so far. */
  started: number;
  /** Workers replaced for their size or age. */
  recycled: number;
  /** Heap (bytes) of the current worker after its first synthesis, when known. */
  baselineHeap?: number;
  /** Heap (bytes) at the current worker's last answer. */
  lastHeap?: number;
  /** Milliseconds from the current worker's start until it had synthesized or warmed up once. */
  startMs?: number;
}

/**
 * Synthesizes task classes in a worker thread that loads the config itself, so the user's code,
 * cdktf and the provider bindings stay off the daemon's main thread (and its heap). The tokens each
 * synthesis registers in cdktf's process-global map are forgotten after it (token-scope.ts); the
 * worker is still replaced past a heap growth over its own baseline, as a safety net against a
 * task that leaks. Only plain data crosses the thread
 * boundary. Module tasks are plain JSON and are built on the calling thread: a daemon whose tasks are
 * all module tasks never starts the worker.
 */
export function workerSynthesizer(opts: WorkerSynthesizerOptions = {}): WorkerSynthesizer {
  const maxSyntheses = opts.maxSyntheses ?? 10_000;
  const growth = opts.maxHeapGrowthBytes ?? 128 * 1024 * 1024;
  const idleMs = opts.idleMs ?? 2 * 60_000;
  let warm = false;
  const clock = opts.clock ?? systemClock;
  let idleTimer: unknown;
  let worker: Worker | undefined;
  let count = 0;
  let recycled = 0;
  let started = 0;
  let startedAt = 0;
  let startMs: number | undefined;
  let baseline: number | undefined;
  let lastHeap: number | undefined;
  /** Whether the current worker has synthesized (or warmed up) once: its code is loaded and compiled. */
  let warmed = false;
  let warming = false;
  let nextId = 1;
  const pending = new Map<number, Pending>();
  let chain: Promise<unknown> = Promise.resolve();

  /** How many of the main thread's secrets the current worker has (workerData, then each request). */
  let secretsSent = 0;

  const start = () => {
    // A worker the CLI started ahead (worker-start.ts) knows no secrets yet: the first request sends them all.
    const early = takeEarlyWorker();
    const secrets = early ? [] : [...knownSecrets.values()];
    const w = early ?? newSynthWorker(secrets);
    secretsSent = secrets.length;
    started++;
    startedAt = performance.now();
    startMs = undefined;
    baseline = undefined;
    lastHeap = undefined;
    warmed = false;
    w.unref();
    w.on("message", (msg: { id: number; ok: boolean; result?: SynthResult | ConfigDescription; error?: SerializedError; secrets: string[]; heapUsed: number; synthesized?: boolean; warmed?: boolean }) => {
      // Before the answer is used: secrets the worker read (a config's `{{ env }}` values) are known
      // to every log line, event and API answer of this thread from now on.
      for (const s of msg.secrets) knownSecrets.add(s);
      const p = pending.get(msg.id);
      pending.delete(msg.id);
      if (worker === w) {
        lastHeap = msg.heapUsed;
        if (msg.warmed || msg.synthesized) {
          warmed = true;
          startMs ??= performance.now() - startedAt;
        }
        if (msg.synthesized) {
          // The first synthesis loaded the config and the binding namespaces its task uses.
          if (baseline === undefined) baseline = msg.heapUsed;
          else if (msg.heapUsed > baseline + growth) retire();
        }
      }
      if (!p) return;
      if (msg.ok) p.resolve(msg.result!);
      else p.reject(deserialize(msg.error!));
    });
    w.on("error", (err) => {
      for (const p of pending.values()) p.reject(new CtsError("SYNTH_WORKER_FAILED", "internal", `the synthesis worker failed: ${err.message}`, { cause: err }));
      pending.clear();
      if (worker === w) worker = undefined;
    });
    w.on("exit", () => {
      if (worker === w) worker = undefined;
    });
    worker = w;
    count = 0;
    return w;
  };
  const retire = () => {
    const w = worker;
    worker = undefined;
    if (w) {
      recycled++;
      void w.terminate();
    }
  };

  const ask = <T>(msg: Record<string, unknown>, counts: boolean) =>
    new Promise<T>((resolve, reject) => {
      if (counts && count >= maxSyntheses) retire();
      const w = worker ?? start();
      if (counts) count++;
      const id = nextId++;
      pending.set(id, { resolve, reject });
      const all = knownSecrets.values();
      const secrets = all.slice(secretsSent);
      secretsSent = all.length;
      w.postMessage({ id, ...msg, secrets });
    });

  const armIdle = (settled: Promise<unknown>) => {
    clock.clearTimeout(idleTimer);
    idleTimer = undefined;
    if (warm || !Number.isFinite(idleMs)) return;
    idleTimer = clock.setTimeout(() => {
      if (chain === settled && pending.size === 0 && worker) {
        const w = worker;
        worker = undefined;
        void w.terminate();
      }
    }, idleMs);
    unrefTimer(idleTimer);
  };

  // One request at a time: synthesis is CPU-bound, and serializing keeps recycling simple.
  const queue = <T>(work: () => Promise<T>): Promise<T> => {
    clock.clearTimeout(idleTimer);
    const run = chain.then(work);
    const settled = run.catch(() => undefined);
    chain = settled;
    void settled.then(() => {
      if (chain !== settled) return; // another request is queued behind this one
      armIdle(settled);
    });
    return run;
  };

  return {
    synth(ref, input, ctx) {
      const module = moduleTaskOf(ref);
      if (module) return Promise.resolve().then(() => synthesizeTask(module, input, ctx));
      return queue(() => ask<SynthResult>({ ref, input, ctx }, true));
    },
    describe: (configFile) => queue(() => ask<ConfigDescription>({ describe: configFile }, false)),
    async checkPlan(ref, plan) {
      // The predicate is the user's code: it runs where the config was loaded.
      if (ref.kind !== "config") return undefined;
      const answer = await queue(() => ask<{ reason?: string }>({ checkPlan: ref, plan }, false));
      return answer.reason;
    },
    prewarm(ref) {
      // Called on every data change: decided without building anything (a module task never needs the worker).
      if ((worker && warmed) || warming || !isTaskClassRef(ref)) return;
      // The thread starts now; the warm-up waits its turn behind any request already queued.
      if (!worker) start();
      warming = true;
      void queue(() => (warmed ? Promise.resolve() : ask<unknown>({ warm: ref }, false)))
        .catch(() => undefined)
        .finally(() => (warming = false));
    },
    keepWarm(on) {
      warm = on;
      if (pending.size === 0) armIdle(chain);
    },
    stats: () => ({ started, recycled, ...(baseline !== undefined ? { baselineHeap: baseline } : {}), ...(lastHeap !== undefined ? { lastHeap } : {}), ...(startMs !== undefined ? { startMs } : {}) }),
    async release() {
      await chain;
      clock.clearTimeout(idleTimer);
      const w = worker;
      worker = undefined;
      if (w) await w.terminate();
    },
    running: () => worker !== undefined,
    async close() {
      clock.clearTimeout(idleTimer);
      const w = worker;
      worker = undefined;
      if (w) await w.terminate();
    },
    recycled: () => recycled,
  };
}

/** An error as it crosses the thread boundary. */
export interface SerializedError {
  code: string;
  category: CtsError["category"];
  message: string;
  task?: string;
  detail?: Record<string, unknown>;
}

/** Error → plain data. */
export function serializeError(err: unknown): SerializedError {
  if (err instanceof CtsError || (err && typeof err === "object" && "code" in err && "category" in err))
    return { code: (err as CtsError).code, category: (err as CtsError).category, message: (err as CtsError).message, task: (err as CtsError).task, detail: (err as CtsError).detail };
  // Only plain data crosses the thread: the user's frames go as text, the stack itself stays here.
  const where = userCode(err);
  return { code: "CTS_INTERNAL", category: "internal", message: `${err instanceof Error ? err.message : String(err)}${where ? ` at ${where.at}` : ""}`, ...(where ? { detail: { at: where.at, userStack: where.frames } } : {}) };
}

function deserialize(e: SerializedError): CtsError {
  // Codes come from cts's own modules in the worker; anything else is reported as internal.
  return new CtsError(isErrorCode(e.code) ? e.code : "CTS_INTERNAL", e.category, e.message, { ...(e.task ? { task: e.task } : {}), detail: e.detail ?? {} });
}
