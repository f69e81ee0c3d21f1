import type { TraceAttributes, TraceEnd } from "../trace/tracing.ts";
import type { RunOutcome } from "./interfaces.ts";
import type { RunMode } from "./run.ts";
import type { TaskEntry } from "./task-entry.ts";

/**
 * What a run's span says about it (src/trace/): the task, the mode, what asked for it and the kind
 * of its condition; never the catalog's data (no service names, addresses or KV values).
 */
export function runTraceAttributes(e: TaskEntry, mode: RunMode, trigger: string): TraceAttributes {
  return { "cts.task.name": e.name, "cts.run.mode": mode, "cts.run.trigger": trigger, "cts.task.condition": e.task.condition.kind };
}

/** What a run's span gets when it ends: the outcome, the resource counts of its plan or apply, the error's code, a hold. */
export function runTraceEnd(outcome: RunOutcome): TraceEnd {
  const s = outcome.result?.summary;
  const attributes: TraceAttributes = {
    "cts.run.outcome": outcome.outcome,
    "cts.run.ok": outcome.ok,
    ...(s ? { "cts.resources.add": s.add, "cts.resources.change": s.change, "cts.resources.destroy": s.destroy } : {}),
    ...(outcome.error ? { "cts.error.code": outcome.error.code } : {}),
  };
  const events = outcome.hold ? [{ name: "cts.hold", attributes: { "cts.hold.why": outcome.hold.why, "cts.hold.reasons": outcome.hold.reasons.length } }] : [];
  const failed = !outcome.ok && outcome.outcome !== "held" && outcome.outcome !== "no-op";
  return { attributes, events, ...(failed && outcome.error ? { error: outcome.error.code } : {}) };
}
