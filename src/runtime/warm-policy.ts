import { isTaskClassRef, type TaskRef } from "../synth/task-ref.ts";
import type { BufferPeriodSettings } from "../watch/buffer.ts";

/**
 * What a synthesis worker's start costs after a quiet spell, with margin: measured 1.0–1.8 s on
 * 2 cores (thread, config, cdktf, the task's binding namespaces, compiling them on the first
 * synthesis). A buffer period at least this long hides the start: the worker starts when the data
 * changes (`prewarm`) and is ready before the buffer period ends.
 */
export const WORKER_START_BUDGET_MS = 3_000;

/** One task as the policy sees it: how it is synthesized and its buffer period. */
export interface WarmCandidate {
  ref: TaskRef;
  buffer: BufferPeriodSettings;
}

/**
 * Whether the synthesis worker should stay warm rather than end after its idle period: when some
 * task class (a module task never needs the worker) would run sooner after a change than a worker
 * starts — its buffer period is off or shorter than the start. Otherwise the idle worker ends and
 * gives its memory back, and a change starts it during the buffer period at no cost to latency.
 */
export function keepsSynthesizerWarm(tasks: WarmCandidate[]): boolean {
  return tasks.some((t) => isTaskClassRef(t.ref) && (!t.buffer.enabled || t.buffer.min < WORKER_START_BUDGET_MS));
}
