import type { Condition, TaskInputs } from "../task/conditions.ts";
import type { Task } from "../task/task.ts";
import type { TaskRef } from "../synth/task-ref.ts";
import type { Subscription } from "../watch/types.ts";
import type { BufferPeriod } from "../watch/buffer.ts";
import type { Source } from "../consul/types.ts";

/** The runtime's record of one task. */
export interface TaskEntry {
  name: string;
  /** The declaration (condition, inputs, buffer period, description). */
  task: Task<Condition, TaskInputs>;
  /** How the synthesizer finds it. */
  ref: TaskRef;
  /** Where it came from: the config file, or the API. */
  origin: "config" | "api";
  enabled: boolean;
  /** Hash of the last JSON applied successfully by this process (the no-op skip). */
  lastAppliedHash?: string;
  /** Live subscriptions while watching, by input field. */
  subs: Array<{ field: "services" | "catalogServices" | "kv"; source: Source; sub: Subscription }>;
  buffer?: BufferPeriod;
  cronTimer?: ReturnType<typeof setTimeout>;
  /** Cancels the run in progress. */
  abort?: AbortController;
  /** Set while the task is being deleted. */
  deleting?: boolean;
}
