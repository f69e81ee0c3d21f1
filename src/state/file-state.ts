import { rmSync } from "node:fs";
import { join } from "node:path";
import type { CtsError } from "../errors/cts-error.ts";
import {
  isAppliedRecord,
  isHoldRecord,
  isOutputsRecord,
  isRunRecord,
  retainRuns,
  type AppliedRecord,
  type DriftResult,
  type HoldRecord,
  type OutputsRecord,
  type RunRecord,
  type RunRetention,
  type StoredTask,
  type TaskChange,
  type TaskEvent,
} from "./records.ts";
import { readKept, removeKept, writeKept } from "../driver/safe-files.ts";
import type { StoredState } from "./stored-state.ts";
import type { TaskState } from "./task-state.ts";

/** The folder under the working dir that holds one folder of kept state per task. */
export const STATE_FOLDER = ".cts-state";
/** A task's applied record: `{"key": "<hash>", "count": 3}` (no key: an apply under way). */
export const APPLIED_FILE = "applied.json";
/** A task's held plan or rejected inputs. */
export const HOLD_FILE = "hold.json";
/** A task's latest Terraform outputs (sensitive values redacted). */
export const OUTPUTS_FILE = "outputs.json";
/** A task's run history, newest first (what the retention keeps). */
export const RUNS_FILE = "runs.json";

/** Files older versions kept in the task's working dir; read once when the new ones are missing, then removed. */
const LEGACY = { hash: ".cts-applied-hash", count: ".cts-applied-count", hold: ".cts-hold.json" };

/** `<working dir>/.cts-state/<task>` (task names start with a letter or '_', so no task works there). */
export function taskStateDir(root: string, task: string): string {
  return join(root, STATE_FOLDER, task);
}

interface Kept {
  applied?: AppliedRecord;
  hold: HoldRecord;
  outputs?: OutputsRecord;
  /** Read from its file on first use. */
  runs?: RunRecord[];
}

/**
 * The task state of a single instance: one folder per task under `<working dir>/.cts-state/`,
 * each file written at once (temp file and rename) and never through a link. A new process takes
 * the count and the holds back, not the applied key: it applies every task once, as CTS does (the
 * key stays on disk for `cts synth`), the outputs and the run history. Events and task records
 * live in memory only (a restart starts from the config, as CTS).
 */
export class FileTaskState implements TaskState {
  private readonly kept = new Map<string, Kept>();
  /** Drift findings live in memory (as before: a restart checks again). */
  private readonly drifts = new Map<string, DriftResult>();

  /**
   * @param root the working dir (driver.terraform.workingDir)
   * @param legacyDirOf where a task's working dir is, for the files older versions kept there
   * @param problem told when a write that may fail without stopping a run failed (logged by the daemon)
   */
  constructor(
    private readonly root: string,
    private readonly legacyDirOf?: (task: string) => string,
    private readonly problem: (err: CtsError) => void = () => {},
  ) {}

  /** The task's folder of kept state. */
  dirOf(task: string): string {
    return taskStateDir(this.root, task);
  }

  applied(task: string): AppliedRecord | undefined {
    return this.load(task).applied;
  }

  async voidApplied(task: string, count?: number): Promise<void> {
    const k = this.load(task);
    if (count !== undefined && count > 0) {
      k.applied = { count };
      writeKept(this.dirOf(task), APPLIED_FILE, JSON.stringify({ count }) + "\n", task);
      return;
    }
    k.applied = undefined;
    removeKept(this.dirOf(task), APPLIED_FILE, task);
  }

  recordApplied(task: string, record: AppliedRecord): void {
    this.load(task).applied = { ...record };
    try {
      writeKept(this.dirOf(task), APPLIED_FILE, JSON.stringify(record) + "\n", task);
    } catch (err) {
      this.problem(err as CtsError); // kept in memory; after a restart the count is unknown
    }
  }

  forgetAppliedKey(task: string): void {
    const k = this.load(task);
    if (!k.applied?.key) return;
    k.applied = k.applied.count !== undefined ? { count: k.applied.count } : undefined;
    try {
      if (k.applied) writeKept(this.dirOf(task), APPLIED_FILE, JSON.stringify(k.applied) + "\n", task);
      else removeKept(this.dirOf(task), APPLIED_FILE, task);
    } catch (err) {
      this.problem(err as CtsError); // forgotten in memory, which is what a run reads
    }
  }

  hold(task: string): HoldRecord {
    return this.load(task).hold;
  }

  setHold(task: string, record: HoldRecord | undefined): void {
    const k = this.load(task);
    k.hold = record?.held || record?.rejected ? record : {};
    try {
      if (k.hold.held || k.hold.rejected) writeKept(this.dirOf(task), HOLD_FILE, JSON.stringify(k.hold) + "\n", task);
      else removeKept(this.dirOf(task), HOLD_FILE, task);
    } catch (err) {
      this.problem(err as CtsError); // kept in memory: a restart plans the inputs again and holds them again
    }
  }

  drift(task: string): DriftResult | undefined {
    return this.drifts.get(task);
  }

  recordDrift(task: string, result: DriftResult | undefined): void {
    if (result) this.drifts.set(task, result);
    else this.drifts.delete(task);
  }

  outputs(task: string): OutputsRecord | undefined {
    return this.load(task).outputs;
  }

  recordOutputs(task: string, record: OutputsRecord): void {
    this.load(task).outputs = record;
    try {
      writeKept(this.dirOf(task), OUTPUTS_FILE, JSON.stringify(record) + "\n", task);
    } catch (err) {
      this.problem(err as CtsError); // kept in memory; a restart shows the outputs of the apply before
    }
  }

  runs(task: string): RunRecord[] {
    return [...this.runsOf(task)];
  }

  recordRun(task: string, run: RunRecord, retention: RunRetention): void {
    const k = this.load(task);
    k.runs = retainRuns([run, ...this.runsOf(task)], retention, Date.parse(run.end_time)).kept;
    try {
      writeKept(this.dirOf(task), RUNS_FILE, JSON.stringify(k.runs) + "\n", task);
    } catch (err) {
      this.problem(err as CtsError); // kept in memory; a restart forgets this run
    }
  }

  private runsOf(task: string): RunRecord[] {
    const k = this.load(task);
    if (!k.runs) {
      const list = parse(readOrNothing(join(this.dirOf(task), RUNS_FILE), task));
      k.runs = Array.isArray(list) ? list.filter((r): r is RunRecord => isRunRecord(r, task)) : [];
    }
    return k.runs;
  }

  recordEvents(_task: string, _events: TaskEvent[]): void {
    /* events live in memory (the runtime's EventStore) */
  }

  recordTask(_change: TaskChange, _record: StoredTask | undefined): void {
    /* task records live in the config (a single instance starts from it) */
  }

  forget(task: string): void {
    this.kept.delete(task);
    this.drifts.delete(task);
    try {
      rmSync(this.dirOf(task), { recursive: true, force: true });
    } catch {
      /* the next task of this name starts from what is left: at most one apply that could be skipped */
    }
  }

  restore(state: StoredState, opts: { except?: ReadonlySet<string> } = {}): void {
    for (const [task, record] of state.holds) if (!opts.except?.has(task)) this.setHold(task, record);
  }

  /** The task's kept state, read from its folder the first time (or from an older version's files). */
  private load(task: string): Kept {
    let k = this.kept.get(task);
    if (k) return k;
    k = { hold: {} };
    this.kept.set(task, k);
    const dir = this.dirOf(task);
    // The count only: a new process applies every task once, as CTS does (the key stays on disk for `cts synth`).
    const applied = parse(readOrNothing(join(dir, APPLIED_FILE), task));
    if (isAppliedRecord(applied) && applied.count !== undefined) k.applied = { count: applied.count };
    const hold = parse(readOrNothing(join(dir, HOLD_FILE), task));
    if (isHoldRecord(hold, task)) k.hold = hold;
    const outputs = parse(readOrNothing(join(dir, OUTPUTS_FILE), task));
    if (isOutputsRecord(outputs)) k.outputs = outputs;
    this.migrate(task, k);
    return k;
  }

  /** Takes the files an older version kept in the task's working dir, once, into the task's folder. */
  private migrate(task: string, k: Kept): void {
    try {
      const dir = this.legacyDirOf?.(task);
      if (!dir) return;
      const key = readOrNothing(join(dir, LEGACY.hash), task)?.trim() || undefined;
      const count = (parse(readOrNothing(join(dir, LEGACY.count), task)) as { count?: unknown } | undefined)?.count;
      const hold = parse(readOrNothing(join(dir, LEGACY.hold), task));
      if (key === undefined && count === undefined && hold === undefined) return;
      const record = { ...(key ? { key } : {}), ...(count !== undefined ? { count } : {}) };
      if (!k.applied && isAppliedRecord(record)) {
        this.recordApplied(task, record);
        k.applied = record.count !== undefined ? { count: record.count } : undefined;
      }
      if (!k.hold.held && !k.hold.rejected && isHoldRecord(hold, task)) this.setHold(task, hold);
      for (const name of Object.values(LEGACY)) rmSync(join(dir, name), { force: true });
    } catch {
      /* an unreadable old file, or no working dir for this name: as if none were kept */
    }
  }
}

/** The applied key kept for `task` (or by an older version in `legacyDir`), read without changing anything (`cts synth`). */
export function keptAppliedKey(root: string, task: string, legacyDir?: string): string | undefined {
  const applied = parse(readOrNothing(join(taskStateDir(root, task), APPLIED_FILE), task));
  if (isAppliedRecord(applied)) return applied.key;
  return legacyDir ? readOrNothing(join(legacyDir, LEGACY.hash), task)?.trim() || undefined : undefined;
}

/** The outputs kept for `task` (sensitive values redacted), read without changing anything (`cts synth`, `cts diff`: task chains). */
export function keptOutputs(root: string, task: string): OutputsRecord | undefined {
  const outputs = parse(readOrNothing(join(taskStateDir(root, task), OUTPUTS_FILE), task));
  return isOutputsRecord(outputs) ? outputs : undefined;
}

function readOrNothing(path: string, task: string): string | undefined {
  try {
    return readKept(path, task);
  } catch {
    return undefined; // a link or an unreadable file: as if nothing were kept (the next write says why)
  }
}

function parse(text: string | undefined): unknown {
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}
