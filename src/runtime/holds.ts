import type { HeldPlan, HoldRecord } from "../state/records.ts";
import type { TaskState } from "../state/task-state.ts";

export { isHoldRecord, planDigest, type HeldPlan, type HoldRecord, type RejectedInputs } from "../state/records.ts";

/**
 * What a hold may become: held, approved, rejected, cleared. The records are the task state's
 * (src/state/): a restart, or a new leader, finds them there.
 */
export class Holds {
  constructor(private readonly state: TaskState) {}

  /** The task's record ({} when nothing is held or rejected). */
  get(task: string): HoldRecord {
    return this.state.hold(task);
  }

  /** The task's held plan, if any. */
  held(task: string): HeldPlan | undefined {
    return this.get(task).held;
  }

  /** Holds a plan (replacing an older hold and a rejection). */
  hold(plan: HeldPlan): void {
    this.state.setHold(plan.task, { held: plan });
  }

  /** Marks the held plan approved; returns it, or undefined when nothing is held. */
  approve(task: string, at = new Date().toISOString()): HeldPlan | undefined {
    const held = this.held(task);
    if (!held) return undefined;
    const approved = { ...held, approvedAt: at };
    this.state.setHold(task, { held: approved });
    return approved;
  }

  /** Rejects the held plan: its inputs are not planned again until they change. Returns it. */
  reject(task: string, at = new Date().toISOString()): HeldPlan | undefined {
    const held = this.held(task);
    if (!held) return undefined;
    this.state.setHold(task, { rejected: { task, hash: held.hash, rejectedAt: at } });
    return held;
  }

  /** Forgets the task's hold and rejection (applied, superseded, task deleted). */
  clear(task: string): void {
    const r = this.get(task);
    if (r.held || r.rejected) this.state.setHold(task, undefined);
  }
}
