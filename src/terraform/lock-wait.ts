import { CtsError } from "../errors/cts-error.ts";
import { formatDuration, TERRAFORM_STATE_LOCKED, type LockInfo } from "./failures.ts";

/** A command that found the task's state locked by someone else, as it starts waiting for the lock. */
export interface StateLockWait {
  task: string;
  /** The command that met the lock (`tofu apply`). */
  command: string;
  /** The holder as Terraform's "Lock Info" names it (ID, Who, Operation, Created…), when it printed one. */
  lock?: LockInfo;
  /** How long the driver waits for the lock before the command fails with TERRAFORM_STATE_LOCKED. */
  waitMs: number;
}

/**
 * Says who holds the lock and how long the command waits:
 * "waiting for the Terraform state lock held by cts@host-a (ID 9a4c…, OperationTypeApply, created …): `tofu apply` waits up to 1m30s for it".
 */
export function stateLockWaitText(w: StateLockWait): string {
  const l = w.lock ?? {};
  const facts = [l.ID && `ID ${l.ID}`, l.Operation, l.Created && `created ${l.Created}`].filter(Boolean).join(", ");
  const holder = l.Who ? ` held by ${l.Who}` : " held by another Terraform";
  return `waiting for the Terraform state lock${holder}${facts ? ` (${facts})` : " (it printed no Lock Info)"}: \`${w.command}\` waits up to ${formatDuration(w.waitMs)} for it`;
}

/** How `waitOutStateLocks` waits and reports. */
export interface LockWaitOptions {
  task: string;
  /** How long the waiting may last, from the first attempt (the driver's lock timeout). */
  timeoutMs: number;
  /** Sleeps between attempts (abortable: the operation's own pause). */
  pause: (ms: number) => Promise<void>;
  /** Called once, when the first attempt meets a lock held by someone else and waiting starts. */
  onWait: (wait: StateLockWait) => void;
  /** Each later attempt that still finds the lock held (a quieter line). */
  onStillLocked?: (line: string) => void;
  now?: () => number;
}

/**
 * Runs `step` again while it fails on a state lock, until the lock timeout. `-lock-timeout` alone
 * is not enough: the consul backend locks a workspace's state once when loading it, without
 * retrying, before the operation's own (retried) lock. A lock failure means nothing was changed,
 * so running the command again is safe. This is the driver's only lock wait, inside one operation
 * (its deadline and cancellation hold); once it gives up with TERRAFORM_STATE_LOCKED, the runtime's
 * retry policy (runtime/retry.ts) decides whether the whole run is tried again.
 */
export async function waitOutStateLocks<T>(step: () => Promise<T>, o: LockWaitOptions): Promise<T> {
  const now = o.now ?? Date.now;
  const deadline = now() + o.timeoutMs;
  for (let pause = 1_000, attempt = 1; ; pause = Math.min(pause * 2, 8_000), attempt++) {
    try {
      return await step();
    } catch (err) {
      if (!(err instanceof CtsError) || err.code !== TERRAFORM_STATE_LOCKED || now() + pause > deadline) throw err;
      const lock = err.detail.lock as LockInfo | undefined;
      if (attempt === 1) {
        const command = typeof err.detail.command === "string" ? err.detail.command : "terraform";
        o.onWait({ task: o.task, command, ...(lock && Object.keys(lock).length ? { lock } : {}), waitMs: o.timeoutMs });
      } else o.onStillLocked?.(`the state is still locked${lock?.Who ? ` by ${lock.Who}` : ""}; trying again in ${pause / 1000}s`);
      await o.pause(pause);
    }
  }
}

/** What the lock wait needs from an operation: its task and its pause (which ends when the operation is stopped). */
export interface LockWaitingOperation {
  readonly task: string;
  pause(ms: number): Promise<void>;
}

/** Runs one step of an operation, waiting out a state lock held elsewhere (the driver's one lock wait). */
export type StateLockWaiter = <T>(op: LockWaitingOperation, step: () => Promise<T>) => Promise<T>;

/**
 * `waitOutStateLocks` with the driver's lock timeout: the first wait of a step goes to `onWait`
 * (default: a `log` line saying who holds the lock), later attempts to `log`.
 */
export function stateLockWaiter(o: { timeoutMs: number; onWait?: (wait: StateLockWait) => void; log?: (task: string, line: string) => void }): StateLockWaiter {
  const onWait = o.onWait ?? ((w: StateLockWait) => o.log?.(w.task, stateLockWaitText(w)));
  return (op, step) =>
    waitOutStateLocks(step, {
      task: op.task,
      timeoutMs: o.timeoutMs,
      pause: (ms) => op.pause(ms),
      onWait,
      onStillLocked: (line) => o.log?.(op.task, line),
    });
}
