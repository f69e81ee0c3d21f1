import { randomBytes } from "node:crypto";
import { lstatSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { inFolder, linkRefused, refuseLinks, removeKept } from "../driver/safe-files.ts";
import { redactOutputs } from "../driver/outputs.ts";
import { CtsError } from "../errors/cts-error.ts";
import { commandFailure, textErrors } from "./failures.ts";
import type { JsonResult, Operation } from "./operation.ts";
import { lockTimeoutArg } from "./settings.ts";
import type { RunResult } from "./types.ts";
import { KEPT_PLAN_FILE, PLAN_FILE } from "./working-dir.ts";

/** A kept plan: the outcome, the JSON plan, the file's name in the task's folder ("" when nothing changes). */
export type KeptPlanOutcome = ChangeOutcome & { plan: Record<string, unknown>; ref: string };

/** What a run does to the task's infrastructure. */
export type ChangeKind = "apply" | "plan" | "destroy";

/** The outcome of the main command (whether init ran is the driver's to add). */
export type ChangeOutcome = Omit<RunResult, "initialized">;

const NO_CHANGES = "No changes. Your infrastructure matches the configuration.";

/** The first words of the main command of a run, as `Operation.commandName` wants them. */
export function changeCommandWords(kind: ChangeKind): string[] {
  return kind === "destroy" ? ["apply", "-destroy"] : [kind];
}

/**
 * The main command of a run (`plan`, `apply`, `apply -destroy`, with `-json`), read into its
 * outcome: whether anything changed, the counts, the text people review. A failure becomes
 * TERRAFORM_STATE_LOCKED or TERRAFORM_FAILED (failures.ts) with a hint that fits the kind of run.
 */
export class ChangeCommands {
  private readonly lockArg: string;

  constructor(private readonly lockTimeoutMs: number) {
    this.lockArg = lockTimeoutArg(lockTimeoutMs);
  }

  /** Runs the `kind` command in the operation; `extraEnv` goes on top of the task's (warm providers). */
  run(kind: ChangeKind, op: Operation, extraEnv?: Record<string, string>): Promise<ChangeOutcome> {
    return kind === "plan" ? this.plan(op, extraEnv) : this.applyOrDestroy(op, kind, extraEnv);
  }

  private async applyOrDestroy(op: Operation, kind: "apply" | "destroy", extraEnv?: Record<string, string>): Promise<ChangeOutcome> {
    const args = ["apply", ...(kind === "destroy" ? ["-destroy"] : []), "-auto-approve", "-input=false", "-lock=true", this.lockArg, "-json"];
    const res = await op.json(args, op.task, extraEnv);
    if (res.exitCode !== 0) {
      const hint =
        kind === "destroy"
          ? `Fix the error and run the destroy again; \`cts inspect ${op.task}\` shows what is left.`
          : `Fix the task's configuration or run \`cts inspect ${op.task}\`.`;
      throw this.failure(op, args, res, hint);
    }
    const summary = res.stream.summary(kind, "apply", "destroy");
    // A destroy leaves no outputs; an apply without an `outputs` message has none.
    const outputs = kind === "destroy" ? {} : redactOutputs(res.stream.outputs ?? {});
    return { changesPresent: summary.add + summary.change + summary.destroy > 0, summary, resources: res.stream.resourceChanges, output: res.stream.lines.join("\n"), outputs };
  }

  private async plan(op: Operation, extraEnv?: Record<string, string>): Promise<ChangeOutcome> {
    const args = ["plan", "-detailed-exitcode", "-input=false", "-lock=true", this.lockArg, "-json", `-out=${PLAN_FILE}`];
    try {
      const res = await op.json(args, op.task, extraEnv);
      if (res.exitCode !== 0 && res.exitCode !== 2) {
        throw this.failure(op, args, res, `Fix the task's configuration and inspect again.`);
      }
      const summary = res.stream.summary("plan");
      if (res.exitCode === 0) return { changesPresent: false, summary, resources: [], output: NO_CHANGES };
      // The JSON stream only names resources; `show` gives the attribute-level diff people review.
      // It costs one more process, paid only when there is something to show.
      const shown = await op.text(["show", "-no-color", PLAN_FILE], op.task, { quiet: true });
      const output = shown.exitCode === 0 ? shown.lines.join("\n").trim() : res.stream.lines.join("\n");
      return { changesPresent: true, summary, resources: res.stream.resourceChanges, output };
    } finally {
      // The plan file can hold sensitive values.
      removeKept(op.dir, PLAN_FILE, op.task);
    }
  }

  /**
   * `plan -out` into the kept plan file and `show -json` of it. No changes: nothing is kept. The
   * human text is the JSON stream's lines (no second `show`): guards need the JSON, people the summary.
   */
  async planToKeep(op: Operation, extraEnv?: Record<string, string>): Promise<KeptPlanOutcome> {
    await discardKeptPlans(op.dir, undefined, op.task);
    const ref = `.cts-kept-${randomBytes(8).toString("hex")}.tfplan`;
    // A new name each time, but Terraform writes it following links: none may be there.
    refuseLinks(op.dir, [ref], op.task);
    const drop = () => removeKept(op.dir, ref, op.task);
    const args = ["plan", "-detailed-exitcode", "-input=false", "-lock=true", this.lockArg, "-json", `-out=${ref}`];
    const res = await op.json(args, op.task, extraEnv);
    if (res.exitCode !== 0 && res.exitCode !== 2) {
      drop();
      throw this.failure(op, args, res, `Fix the task's configuration and run it again.`);
    }
    const summary = res.stream.summary("plan");
    if (res.exitCode === 0) {
      drop();
      return { changesPresent: false, summary, resources: [], output: NO_CHANGES, plan: {}, ref: "" };
    }
    const shown = await op.text(["show", "-json", ref], op.task, { quiet: true });
    let plan: Record<string, unknown> | undefined;
    try {
      plan = shown.exitCode === 0 ? (JSON.parse(shown.lines.join("\n")) as Record<string, unknown>) : undefined;
    } catch {
      plan = undefined;
    }
    if (!plan) {
      drop();
      throw new CtsError("TERRAFORM_FAILED", "external", `\`${op.commandName(["show"])} -json\` could not read the plan it just saved (exit ${shown.exitCode ?? "by signal"}). Run the task again.`, { task: op.task });
    }
    return { changesPresent: true, summary, resources: res.stream.resourceChanges, output: res.stream.lines.join("\n"), plan, ref };
  }

  /** `apply` of the kept plan file `ref`; the file is removed afterwards whatever happened (a plan applies once). */
  async applyKept(op: Operation, ref: string, extraEnv?: Record<string, string>): Promise<ChangeOutcome> {
    // The handle may come from stored state (KV): only a kept plan's own name is ever opened.
    if (!KEPT_PLAN_FILE.test(ref)) throw new CtsError("PLAN_NOT_FOUND", "external", "has no kept plan by that name in its working directory; planning again.", { task: op.task });
    const file = join(op.dir, ref);
    const st = inFolder("check", file, op.task, () => lstatSync(file, { throwIfNoEntry: false }));
    if (st?.isSymbolicLink()) throw linkRefused(file, op.task);
    if (!st)
      throw new CtsError("PLAN_NOT_FOUND", "external", "has no kept plan in its working directory (made by another instance, or discarded); planning again.", { task: op.task });
    const args = ["apply", "-auto-approve", "-input=false", "-lock=true", this.lockArg, "-json", ref];
    try {
      const res = await op.json(args, op.task, extraEnv);
      if (res.exitCode !== 0) {
        const text = `${res.stream.errorText()}\n${res.stderr.join("\n")}`;
        if (/saved plan is stale/i.test(text))
          throw new CtsError("PLAN_STALE", "external", "the state changed since the held plan was made; it was not applied. Planning again.", { task: op.task });
        throw this.failure(op, args, res, `Fix the task's configuration or run \`cts inspect ${op.task}\`.`);
      }
      const summary = res.stream.summary("apply", "apply", "destroy");
      const outputs = redactOutputs(res.stream.outputs ?? {});
      return { changesPresent: summary.add + summary.change + summary.destroy > 0, summary, resources: res.stream.resourceChanges, output: res.stream.lines.join("\n"), outputs };
    } finally {
      removeKept(op.dir, ref, op.task);
    }
  }

  /** The error of a failed `-json` command, from its diagnostics (or its text when the JSON view never started). */
  private failure(op: Operation, args: string[], res: JsonResult, hint: string): CtsError {
    const facts = {
      command: op.commandName(args),
      exitCode: res.exitCode,
      errors: res.stream.errorText() || textErrors(res.stderr) || textErrors(res.stream.lines),
      hint,
    };
    // The lock holder's "Lock Info" is in a diagnostic's detail, line by line.
    const raw = [...res.stream.diagnostics.map((d) => `${d.summary}\n${d.detail}`), ...res.stderr].join("\n");
    return commandFailure(op.task, facts, raw, this.lockTimeoutMs);
  }
}

/** Removes the plans kept in a task's folder (a new plan replaces them; each may hold sensitive values); a folder that is a link is refused. */
export async function discardKeptPlans(dir: string, only?: string, task?: string): Promise<void> {
  const st = lstatSync(dir, { throwIfNoEntry: false });
  if (!st) return;
  if (st.isSymbolicLink()) throw linkRefused(dir, task);
  for (const name of inFolder("list", dir, task, () => readdirSync(dir))) {
    if (KEPT_PLAN_FILE.test(name) && (only === undefined || name === only)) removeKept(dir, name, task);
  }
}
