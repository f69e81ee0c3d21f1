import { retainRuns, type AppliedRecord, type DriftResult, type HoldRecord, type OutputsRecord, type RunRecord } from "./records.ts";
import type { TaskState } from "./task-state.ts";

/** A task state kept in memory only (unit tests, a runner without a working dir): forgotten with the process. */
export function memoryTaskState(): TaskState {
  const applied = new Map<string, AppliedRecord>();
  const holds = new Map<string, HoldRecord>();
  const drift = new Map<string, DriftResult>();
  const outputs = new Map<string, OutputsRecord>();
  const runs = new Map<string, RunRecord[]>();
  return {
    outputs: (task) => outputs.get(task),
    recordOutputs: (task, record) => void outputs.set(task, record),
    runs: (task) => [...(runs.get(task) ?? [])],
    recordRun(task, run, retention) {
      runs.set(task, retainRuns([run, ...(runs.get(task) ?? [])], retention, Date.parse(run.end_time)).kept);
    },
    drift: (task) => drift.get(task),
    recordDrift: (task, result) => void (result ? drift.set(task, result) : drift.delete(task)),
    applied: (task) => applied.get(task),
    async voidApplied(task, count) {
      if (count !== undefined && count > 0) applied.set(task, { count });
      else applied.delete(task);
    },
    recordApplied: (task, record) => void applied.set(task, { ...record }),
    forgetAppliedKey(task) {
      const count = applied.get(task)?.count;
      if (count !== undefined) applied.set(task, { count });
      else applied.delete(task);
    },
    hold: (task) => holds.get(task) ?? {},
    setHold(task, record) {
      if (record?.held || record?.rejected) holds.set(task, record);
      else holds.delete(task);
    },
    recordEvents() {},
    recordTask() {},
    forget(task) {
      applied.delete(task);
      holds.delete(task);
      drift.delete(task);
      outputs.delete(task);
      runs.delete(task);
    },
  };
}
