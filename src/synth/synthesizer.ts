import { Worker } from "node:worker_threads";
import { systemClock, unrefTimer, type Clock } from "../clock.ts";
import { CtsError, isErrorCode } from "../errors.ts";
import type { AnyTaskInput, Task } from "../task/task.ts";
import type { Condition, TaskInputs } from "../task/conditions.ts";
import { ModuleTask } from "../task/module-task.ts";
import { moduleTaskFrom } from "../task/declaration.ts";
import type { ConfigDescription } from "../config/description.ts";
import { synthesizeTask, type SynthContext, type SynthResult } from "./synthesize.ts";
import type { TaskRef } from "./task-ref.ts";
import { knownSecrets } from "../secrets/redactor.ts";
import { userCode } from "../user-frames.ts";

/** Turns a task and its input into Terraform JSON. */
export interface Synthesizer {
  synth(ref: TaskRef, input: AnyTaskInput, ctx: SynthContext): Promise<SynthResult>;
  /** Frees the worker (if any). */
  close(): Promise<void>;
}

/** The module task a ref names, when it can be built on this thread without the config (else undefined). */
export function moduleTaskOf(ref: TaskRef): ModuleTask<Condition, TaskInputs> | undefined {
  if (ref.kind === "module") return new ModuleTask(ref.spec);
  return ref.module ? moduleTaskFrom(ref.module) : undefined;
}

/** Synthesizes on the calling thread (for `cts synth`, `once` and tests). cdktf's token map grows. */
export function inProcessSynthesizer(lookup: (name: string) => Task<Condition, TaskInputs> | undefined): Synthesizer {
  return {
    async synth(ref, input, ctx) {
      const task = ref.kind === "module" ? new ModuleTask(ref.spec) : lookup(ref.name);
      if (!task) throw new CtsError("TASK_NOT_FOUND", "usage", `no task '${ref.kind === "config" ? ref.name : ref.spec.name}' in the config`);
      return synthesizeTask(task, input, ctx);
    },
    async close() {},
  };
}

/** Options of the worker synthesizer. */
export interface WorkerSynthesizerOptions {
  /** Replace the worker after this many syntheses (default 200). */
  maxSyntheses?: number;
  /** Replace the worker when its heap passes this many bytes (default 256 MiB). */
  maxHeapBytes?: number;
  /**
   * End the worker after this long without a synthesis (default 2 min): a daemon whose tasks are
   * quiet holds no CDKTF heap; the next change starts a worker again (about 1 s).
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
  recycled(): number;
  running(): boolean;
}

/**
 * Synthesizes task classes in a worker thread that loads the config itself and is recycled after N
 * syntheses or past a heap size: cdktf keeps every token in a process-global map that is never
 * cleared, so a long-running daemon must throw that memory away. Only plain data crosses the thread
 * boundary. Module tasks are plain JSON and are built on the calling thread: a daemon whose tasks are
 * all module tasks never starts the worker.
 */
export function workerSynthesizer(opts: WorkerSynthesizerOptions = {}): WorkerSynthesizer {
  const maxSyntheses = opts.maxSyntheses ?? 200;
  const maxHeap = opts.maxHeapBytes ?? 256 * 1024 * 1024;
  const idleMs = opts.idleMs ?? 2 * 60_000;
  const clock = opts.clock ?? systemClock;
  let idleTimer: unknown;
  let worker: Worker | undefined;
  let count = 0;
  let recycled = 0;
  let nextId = 1;
  const pending = new Map<number, Pending>();
  let chain: Promise<unknown> = Promise.resolve();

  /** How many of the main thread's secrets the current worker has (workerData, then each request). */
  let secretsSent = 0;

  const start = () => {
    const secrets = [...knownSecrets.values()];
    const w = new Worker(new URL("./worker-boot.mjs", import.meta.url), { workerData: { secrets } });
    secretsSent = secrets.length;
    w.unref();
    w.on("message", (msg: { id: number; ok: boolean; result?: SynthResult | ConfigDescription; error?: SerializedError; secrets: string[]; heapUsed: number }) => {
      // Before the answer is used: secrets the worker read (a config's `{{ env }}` values) are known
      // to every log line, event and API answer of this thread from now on.
      for (const s of msg.secrets) knownSecrets.add(s);
      const p = pending.get(msg.id);
      pending.delete(msg.id);
      if (!p) return;
      if (msg.ok) p.resolve(msg.result!);
      else p.reject(deserialize(msg.error!));
      if (msg.heapUsed > maxHeap) retire();
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

  // One request at a time: synthesis is CPU-bound, and serializing keeps recycling simple.
  const queue = <T>(work: () => Promise<T>): Promise<T> => {
    clock.clearTimeout(idleTimer);
    const run = chain.then(work);
    const settled = run.catch(() => undefined);
    chain = settled;
    void settled.then(() => {
      if (chain !== settled) return; // another request is queued behind this one
      idleTimer = clock.setTimeout(() => {
        if (chain === settled && pending.size === 0 && worker) {
          const w = worker;
          worker = undefined;
          void w.terminate();
        }
      }, idleMs);
      unrefTimer(idleTimer);
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
