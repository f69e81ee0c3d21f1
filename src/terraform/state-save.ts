import { lstatSync, renameSync } from "node:fs";
import { join } from "node:path";
import { CtsError } from "../errors/cts-error.ts";
import { inFolder, readKept } from "../driver/safe-files.ts";
import { stateObjects, type StateObject } from "../driver/state-objects.ts";

/**
 * How OpenTofu and Terraform say that the state an apply wrote may not be where the backend keeps
 * it, or that the state lock was lost while they ran: then another Terraform may have written the
 * same state meanwhile (an instance stalled past its lock, issue #36), and what the apply did may
 * be in no state at all.
 */
const STATE_NOT_SAVED = /Failed to save state|Failed to persist state|consul CAS failed|lock was lost|Error releasing the state lock|Failed to unlock state/i;

/** The state Terraform writes into the working dir when it could not save it to the backend. */
export const ERRORED_STATE = "errored.tfstate";

/** The first words of `text` that say the state was not saved or its lock was lost, or undefined. */
export function stateNotSavedSign(text: string): string | undefined {
  return STATE_NOT_SAVED.exec(text)?.[0];
}

/**
 * The objects of the `errored.tfstate` Terraform left in `dir`, which is moved aside (to
 * `errored-<time>.tfstate`, kept for `tofu state push` or an import) so a later failure is not read
 * as this one. Undefined when there is none.
 */
export function takeErroredState(dir: string, task: string, now = new Date()): { objects: StateObject[]; file: string } | undefined {
  const path = join(dir, ERRORED_STATE);
  const text = readKept(path, task);
  if (text === undefined) return undefined;
  const kept = join(dir, `errored-${now.toISOString().replace(/[:.]/g, "-")}.tfstate`);
  inFolder("move", path, task, () => {
    if (!lstatSync(path).isSymbolicLink()) renameSync(path, kept);
  });
  return { objects: stateObjects(text) ?? [], file: kept };
}

/** Names the objects for a message: `address (id)`, at most `max`. */
export function objectsText(objects: readonly StateObject[], max = 10): string {
  const named = objects.slice(0, max).map((o) => (o.id ? `${o.address} (id ${o.id})` : o.address));
  return objects.length > max ? `${named.join(", ")} and ${objects.length - max} more` : named.join(", ");
}

/**
 * TERRAFORM_STATE_NOT_SAVED: the apply's state did not reach the backend, or its lock was lost.
 * `left`: what Terraform kept in errored.tfstate (the objects it had made or changed).
 */
export function stateNotSavedError(task: string, facts: { command: string; sign: string; errors: string; left?: { objects: StateObject[]; file: string } }): CtsError {
  const left = facts.left;
  const what = left
    ? left.objects.length
      ? ` What it had made is in ${left.file}: ${objectsText(left.objects)}; those not in the saved state exist outside any state.`
      : ` Its state is kept in ${left.file}.`
    : "";
  return new CtsError(
    "TERRAFORM_STATE_NOT_SAVED",
    "external",
    `\`${facts.command}\` could not save its state or lost its state lock ("${facts.sign}"): another Terraform may have written this task's state meanwhile, and what this apply changed may be in no state.${what} cts runs the task again (a plan with refresh) and reports what is still outside the state.`,
    {
      task,
      detail: {
        command: facts.command,
        errors: facts.errors,
        ...(left ? { outsideState: left.objects, erroredState: left.file } : {}),
      },
    },
  );
}
