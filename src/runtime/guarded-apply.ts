import { CtsError, isErrorCode } from "../errors/cts-error.ts";
import { guardViolations, type GuardSettings, type PlanJson } from "../task/guards.ts";
import { knownSecrets } from "../secrets/redactor.ts";
import type { Logger } from "../log/logger.ts";
import type { Driver, RunResult, TaskWorkspace } from "../driver/types.ts";
import type { SynthResult } from "../synth/synthesize.ts";
import type { Synthesizer } from "../synth/synthesizer.ts";
import { tracePhase } from "../trace/tracing.ts";
import { planDigest, type HeldPlan, type Holds } from "./holds.ts";
import type { RunOutcome } from "./interfaces.ts";
import type { TaskEntry } from "./task-entry.ts";

/** What a guarded apply needs of the run around it. */
export interface GuardedApplyParts {
  /** The driver's kept plans. */
  driver: Pick<Driver, "planToApply" | "applyPlan" | "discardPlan">;
  holds: Holds;
  log: Logger;
  synthesizer: Pick<Synthesizer, "checkPlan">;
  /** Forgets the task's applied key before Terraform may change anything (TaskRunner.voidAppliedHash). */
  voidApplied(e: TaskEntry, count?: number): Promise<void>;
  /** Records a successful apply (TaskRunner.applied); `planned`: a kept plan with changes was applied. */
  applied(e: TaskEntry, synth: SynthResult, key: string, result: RunResult, count: number | undefined, planned: boolean): Promise<RunOutcome>;
}

/** One guarded apply's inputs: the run's synthesis, workspace and applied key, and what the guards are. */
export interface GuardedRun {
  e: TaskEntry;
  synth: SynthResult;
  ws: TaskWorkspace;
  key: string;
  signal: AbortSignal;
  guards: GuardSettings | undefined;
  always: boolean;
  onOutput: (line: string) => void;
  count?: number;
  /** How the state the task applied to was lost, when it was (a person then decides). */
  stateLost?: string;
}

/** Plan guards and approval: plans held for a person, applied exactly as approved, or rejected. */
export class GuardedApply {
  constructor(private readonly parts: GuardedApplyParts) {}

  /**
   * An apply behind plan guards: plan into a kept plan, check it, then apply exactly that plan or
   * hold it for a person. A held plan of the same inputs stays held (no new plan) until approved or
   * rejected; other inputs supersede it. An approved plan is applied from its kept file; when that is
   * gone or stale (restart on another machine, the state moved), the new plan is applied only if it
   * makes the same changes (same digest), else it is checked again.
   */
  async apply(run: GuardedRun): Promise<RunOutcome> {
    const { e, synth, ws, key, signal, guards, always, onOutput, count, stateLost } = run;
    const { driver, holds } = this.parts;
    if (!driver.planToApply || !driver.applyPlan)
      throw new CtsError("PLAN_UNSUPPORTED", "usage", "has plan guards or approval, but the driver cannot keep a plan to apply later.", { task: e.name });
    const record = holds.get(e.name);
    if (record.rejected?.hash === key) return { task: e.name, ok: false, outcome: "rejected", synth, error: rejectedError(e.name) };
    let approvedDigest: string | undefined;
    const held = record.held;
    if (held && held.hash === key) {
      if (!held.approvedAt) return { task: e.name, ok: false, outcome: "held", synth, hold: held, result: heldResult(held), error: heldError(held) };
      approvedDigest = held.digest;
      if (held.ref) {
        try {
          await this.parts.voidApplied(e, count);
          const result = await driver.applyPlan(ws, held.ref, { signal, onOutput });
          holds.clear(e.name);
          this.parts.log.info(`task '${e.name}': applied the approved plan (${summaryWords(result.summary)})`, { task: e.name });
          return this.parts.applied(e, synth, key, result, count, true);
        } catch (err) {
          if (!(isErrorCode((err as CtsError)?.code) && ((err as CtsError).code === "PLAN_NOT_FOUND" || (err as CtsError).code === "PLAN_STALE"))) throw err;
          this.parts.log.warn(`task '${e.name}': ${(err as CtsError).message}`, { task: e.name });
        }
      }
    } else if (held) {
      this.parts.log.info(`task '${e.name}': the held plan is superseded by newer inputs; planning them`, { task: e.name });
      await this.dropHold(e, undefined);
    }
    const plan = await driver.planToApply(ws, { signal, onOutput });
    if (!plan.changesPresent) {
      holds.clear(e.name);
      return this.parts.applied(e, synth, key, stripPlan(plan), count, false);
    }
    const digest = planDigest(plan.plan);
    let reasons: string[] = [];
    let why: HeldPlan["why"] = "guards";
    if (approvedDigest !== digest) {
      reasons = guards ? await tracePhase("guard-check", async () => guardViolations(plan.plan as PlanJson, guards)) : [];
      if (guards?.check) {
        const reason = await tracePhase("guard-check", async () => this.parts.synthesizer.checkPlan?.(e.ref, plan.plan as PlanJson));
        if (reason) reasons.push(reason);
      }
      // A lost state with guards set: a person decides whether to create it all again (or import it first).
      if (stateLost && guards) reasons.push(`the Terraform state this task applied to ${stateLost}: this plan creates again what may still exist; approve it, or import the resources first`);
      if (reasons.length === 0 && always) {
        reasons.push('the task\'s approval is "always": every plan waits for `cts approve`');
        why = "always";
      }
    }
    if (reasons.length) {
      // Kept on disk and in Consul KV: scrubbed like an event (a predicate's reason could quote anything).
      const hold: HeldPlan = knownSecrets.redactDeep({
        task: e.name,
        hash: key,
        ref: plan.ref,
        digest,
        reasons,
        why,
        summary: plan.summary,
        resources: plan.resources ?? [],
        heldAt: new Date().toISOString(),
      } satisfies HeldPlan);
      holds.hold(hold);
      return { task: e.name, ok: false, outcome: "held", synth, hold, result: stripPlan(plan), error: heldError(hold) };
    }
    await this.parts.voidApplied(e, count);
    const result = await driver.applyPlan(ws, plan.ref, { signal, onOutput });
    holds.clear(e.name);
    return this.parts.applied(e, synth, key, result, count, true);
  }

  /** Lets go of a task's hold: the kept plan is discarded, the record cleared. */
  async dropHold(e: TaskEntry | string, why: string | undefined): Promise<HeldPlan | undefined> {
    const name = typeof e === "string" ? e : e.name;
    const held = this.parts.holds.held(name);
    this.parts.holds.clear(name);
    // Said as the hold goes (the status shows none from here on), not after the kept plan is removed.
    if (held && why) this.parts.log.info(`task '${name}': the held plan was dropped: ${why}`, { task: name });
    if (held?.ref) await this.parts.driver.discardPlan?.(name, held.ref).catch(() => undefined);
    return held;
  }

  /** Rejects a task's held plan: discards the kept plan; the same inputs are not planned again until they change. */
  async reject(name: string): Promise<HeldPlan | undefined> {
    const held = this.parts.holds.reject(name);
    if (held?.ref) await this.parts.driver.discardPlan?.(name, held.ref).catch(() => undefined);
    return held;
  }
}

/** A run result without the plan JSON (it may hold sensitive values and must not travel further). */
function stripPlan(p: RunResult & { plan?: unknown; ref?: string }): RunResult {
  const { plan: _plan, ref: _ref, ...rest } = p;
  return rest;
}

/** The run result a held plan shows (what it would change). */
function heldResult(h: HeldPlan): RunResult {
  return { changesPresent: true, summary: h.summary, resources: h.resources, output: "" };
}

function summaryWords(c: { add: number; change: number; destroy: number }): string {
  return `${c.add} to add, ${c.change} to change, ${c.destroy} to destroy`;
}

/** PLAN_HELD: what was held and why, with the commands that decide. */
export function heldError(h: HeldPlan): CtsError {
  return new CtsError(
    "PLAN_HELD",
    "external",
    `plan held for approval (${summaryWords(h.summary)}): ${h.reasons.join("; ")}. Apply exactly it with \`cts approve ${h.task}\`, or discard it with \`cts reject ${h.task}\`.`,
    { task: h.task, detail: { reasons: h.reasons, summary: h.summary } },
  );
}

function rejectedError(task: string): CtsError {
  return new CtsError("PLAN_HELD", "external", `the plan of these inputs was rejected; nothing is applied until the task's inputs change (or it is run again after they do).`, { task });
}
