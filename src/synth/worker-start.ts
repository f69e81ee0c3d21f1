import { Worker } from "node:worker_threads";

/** A synthesis worker started ahead of its synthesizer (`startWorkerEarly`), with what became of it. */
interface EarlyWorker {
  worker: Worker;
  failed: boolean;
  onFailure: () => void;
}

let early: EarlyWorker | undefined;

/** A new synthesis worker thread, knowing the main thread's secrets of this moment. */
export function newSynthWorker(secrets: string[]): Worker {
  return new Worker(new URL("./worker-boot.mjs", import.meta.url), { workerData: { secrets } });
}

/**
 * Starts the synthesis worker now, before the CLI has loaded the rest of its modules: `cts watch`
 * and `cts start` have it read the config (src/synth/daemon-config.ts), and the thread's own start
 * (Node's, then cts's modules in it) overlaps the main thread's. The daemon's synthesizer takes it
 * (`takeEarlyWorker`); until then it is unref'd and an error of it is only remembered.
 */
export function startWorkerEarly(): Worker {
  if (early) return early.worker;
  const entry: EarlyWorker = { worker: newSynthWorker([]), failed: false, onFailure: () => (entry.failed = true) };
  entry.worker.unref();
  entry.worker.on("error", entry.onFailure).on("exit", entry.onFailure);
  early = entry;
  return entry.worker;
}

/**
 * The worker `startWorkerEarly` started, once (it was told no secrets: the first request sends
 * them all); undefined when none was started or it failed.
 */
export function takeEarlyWorker(): Worker | undefined {
  const entry = early;
  early = undefined;
  if (!entry) return undefined;
  entry.worker.off("error", entry.onFailure).off("exit", entry.onFailure);
  if (!entry.failed) return entry.worker;
  void entry.worker.terminate();
  return undefined;
}

/** Ends a started worker nobody took (tests). */
export async function dropEarlyWorker(): Promise<void> {
  const w = takeEarlyWorker();
  if (w) await w.terminate();
}
