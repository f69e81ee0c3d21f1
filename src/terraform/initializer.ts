import { existsSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { removeKept } from "../driver/safe-files.ts";
import type { Phase } from "./command-runner.ts";
import { initHash } from "./init-hash.ts";
import { reuseKey, type InitReuse } from "./init-reuse.ts";
import type { InitSteps } from "./init-steps.ts";
import type { StateLockWaiter } from "./lock-wait.ts";
import type { Operation } from "./operation.ts";
import type { TaskWorkspace } from "./types.ts";
import { INIT_MARKER, readInitRecord, writeInitRecord, type InitRecord } from "./working-dir.ts";

/** What the initializer works with. */
export interface InitializerOptions {
  /** `init` and making sure the workspace exists. */
  steps: InitSteps;
  /** Shares one `init` between fresh folders with the same init inputs; undefined when every folder runs its own. */
  reuse?: InitReuse;
  /** Created before the first init that uses it. */
  pluginCacheDir?: string;
  /** The environment a task's commands get (part of what makes two inits the same). */
  env: (task?: Record<string, string>) => Record<string, string>;
  waitForLocks: StateLockWaiter;
  /** Measures the init phase. */
  phase: <T>(task: string, phase: Phase, step: () => Promise<T>) => Promise<T>;
  log?: (task: string, line: string) => void;
  /** Where the line of a re-init for a changed binary goes (default `log`). */
  notice?: (task: string, line: string) => void;
  /** The binary that runs the commands (`tofu 1.12.6`): part of a folder's identity, recorded at init. */
  binary?: () => Promise<string | undefined>;
}

/** Why a folder needs `init`, or undefined when it does not. */
export type InitReason = "no record" | "inputs changed" | "no .terraform" | "binary changed" | "binary not recorded";

/**
 * The init decision: whether the folder's init record (or its absence) still fits the init inputs'
 * hash and the binary that will run, and `.terraform` is still there.
 */
export function initReason(record: InitRecord | undefined, hash: string, binary: string | undefined, hasDataDir: boolean): InitReason | undefined {
  if (!record) return "no record";
  if (record.hash !== hash) return "inputs changed";
  if (!hasDataDir) return "no .terraform";
  if (binary !== undefined && record.binary === undefined) return "binary not recorded";
  if (binary !== undefined && record.binary !== binary) return "binary changed";
  return undefined;
}

/** The one line a re-init for the binary logs, or undefined for the other reasons (they are routine). */
export function binaryReinitLine(reason: InitReason | undefined, record: InitRecord | undefined, binary: string | undefined): string | undefined {
  if (reason === "binary changed")
    return `re-initializing the working directory: it was initialized by ${record?.binary} and this cts runs ${binary} (providers are installed again for this binary)`;
  if (reason === "binary not recorded") return `re-initializing the working directory once: its init record does not say which binary made it (recorded from now on: ${binary})`;
  return undefined;
}

/**
 * Decides whether a task folder needs `init` and brings it there: init runs only when the init
 * inputs (backend, providers, modules: init-hash.ts) or the binary (kind and version) changed since
 * the last successful one, or `.terraform` is gone (`initReason`). A fresh folder may get a copy of
 * an identical init of another task instead (init-reuse.ts). Then the task's workspace is made sure
 * of, and the inputs' hash and the binary recorded (the init record, `.cts-init`).
 */
export class Initializer {
  private cacheReady: Promise<unknown> | undefined;

  constructor(private readonly o: InitializerOptions) {}

  /** Initializes the task's folder when needed; true when it did. */
  ensure(op: Operation, ws: TaskWorkspace): Promise<boolean> {
    return this.initialize(op, ws, false);
  }

  /** Initializes once more whatever the record says (a damaged `.terraform`, a vanished workspace), with an `init` of its own. */
  async again(op: Operation, ws: TaskWorkspace): Promise<void> {
    const key = this.shareKey(ws, initHash(ws.json, ws.files));
    if (key) this.o.reuse?.forget(key);
    await this.initialize(op, ws, true);
  }

  private async initialize(op: Operation, ws: TaskWorkspace, force: boolean): Promise<boolean> {
    const hash = initHash(ws.json, ws.files);
    const binary = await this.o.binary?.();
    const record = await readInitRecord(op.dir, op.task);
    // existsSync: one stat of a local path, cheaper than a thread-pool round trip (see working-dir.ts).
    const reason = initReason(record, hash, binary, existsSync(join(op.dir, ".terraform")));
    if (!force && !reason) return false;
    const why = force ? undefined : binaryReinitLine(reason, record, binary);
    if (why) (this.o.notice ?? this.o.log)?.(op.task, why);
    if (this.o.pluginCacheDir) await (this.cacheReady ??= mkdir(this.o.pluginCacheDir, { recursive: true }));
    const key = this.shareKey(ws, hash);
    await this.o.phase(op.task, "init", async () => {
      removeKept(op.dir, INIT_MARKER, op.task);
      // init asks which workspace to use when the selected one vanished from the backend (a
      // restarted dev Consul); starting from "default", which always exists, avoids the prompt.
      removeKept(join(op.dir, ".terraform"), "environment", op.task);
      const reuse = this.o.reuse;
      const runInit = () => this.o.steps.runInit(op);
      if (force || !key || !reuse) await runInit();
      else if ((await reuse.init(op.dir, key, runInit, (p) => op.until(p, op.commandName(["init"])), op.task)) === "reused") {
        this.o.log?.(op.task, "initialized from another task's identical init (same providers, backend and environment): no `init` of its own");
      }
      await this.o.waitForLocks(op, () => this.o.steps.ensureWorkspace(op));
    });
    writeInitRecord(op.dir, binary ? { hash, binary } : { hash }, op.task);
    return true;
  }

  /** The key under which a fresh folder may share another's init, or undefined when it may not. */
  private shareKey(ws: TaskWorkspace, hash: string): string | undefined {
    if (!this.o.reuse) return undefined;
    const env = this.o.env(ws.env);
    // A data dir elsewhere is not the `.terraform` we know how to copy.
    if (env.TF_DATA_DIR) return undefined;
    return reuseKey(hash, ws.json, ws.files ?? {}, env);
  }
}
