import { CtsError } from "../errors/cts-error.ts";
import { outsideOf, type StateObject } from "../driver/state-objects.ts";
import type { Logger } from "../log/logger.ts";
import type { Metrics } from "../metrics/metrics.ts";

/** What a run reports after an apply of its task could not save its state (TERRAFORM_STATE_NOT_SAVED). */
export interface StateNotSavedReport {
  /** The failed apply's error message. */
  error: string;
  /** What the failed apply had made that the saved state does not hold now (all of it when `checked` is false). */
  outside: StateObject[];
  /** Whether the saved state was read to tell (false: another backend, or it could not be read). */
  checked: boolean;
}

/**
 * The tasks whose apply could not save its state or lost its state lock: what Terraform had made
 * then (from errored.tfstate), kept until an apply of the task succeeds, which then looks at the
 * saved state and reports what is outside it. Kept in memory: a restart or a failover forgets it,
 * but the failed attempt's log line and the retried run's event have said it by then.
 */
export class UnsavedStates {
  private readonly pending = new Map<string, { error: string; objects: StateObject[] }>();

  constructor(private readonly deps: { log: Logger; metrics?: Metrics }) {}

  /** An apply failed: a TERRAFORM_STATE_NOT_SAVED is remembered (and counted); anything else is not this class's. */
  failed(task: string, err: unknown): void {
    if (!(err instanceof CtsError) || err.code !== "TERRAFORM_STATE_NOT_SAVED") return;
    const objects = Array.isArray(err.detail.outsideState) ? (err.detail.outsideState as StateObject[]) : [];
    const before = this.pending.get(task)?.objects ?? [];
    this.pending.set(task, { error: err.message, objects: [...before, ...outsideOf(objects, before)] });
    this.deps.metrics?.stateNotSaved?.(task);
    this.deps.log.error(`task '${task}': ${err.message}`, { task, code: err.code });
  }

  /** Whether an apply of `task` failed to save its state and no apply has succeeded since. */
  has(task: string): boolean {
    return this.pending.has(task);
  }

  /**
   * After a successful apply: what the failed apply had made that the saved state (`savedObjects`,
   * read with Terraform) does not hold (by address and id), reported in a log line and the metrics; undefined when no apply failed
   * to save since the last report.
   */
  async settle(task: string, savedObjects: (() => Promise<StateObject[]>) | undefined): Promise<StateNotSavedReport | undefined> {
    const was = this.pending.get(task);
    if (!was) return undefined;
    this.pending.delete(task);
    const saved = await savedObjects?.().catch((err: unknown) => {
      this.deps.log.warn(`task '${task}': could not read the saved state to compare: ${err instanceof Error ? err.message : String(err)}`, { task });
      return undefined;
    });
    const outside = saved ? outsideOf(was.objects, saved) : was.objects;
    const report = { error: was.error, outside, checked: saved !== undefined };
    if (outside.length) {
      this.deps.metrics?.objectsOutsideState?.(task, outside.length);
      const names = outside.map((o) => (o.id ? `${o.address} (id ${o.id})` : o.address)).join(", ");
      this.deps.log.error(
        `task '${task}': applied again after an apply that could not save its state; ${report.checked ? "outside the saved state" : "possibly outside the saved state (it cannot be read here)"}: ${names}. Import them (\`tofu import\` in the task's working dir) or delete them`,
        { task, outside: outside.length },
      );
    } else {
      this.deps.log.warn(`task '${task}': applied again after an apply that could not save its state; ${report.checked ? "everything that apply had made is in the saved state" : "the saved state could not be read to compare"}`, { task });
    }
    return report;
  }
}
