import { newId } from "../ids.ts";
import { ApiError, runActions, type ServerContext } from "../jsonapi.ts";
import { type Run, setPhaseStatus, setRunStatus, type Workspace } from "../store.ts";
import { executeApply, executePlan, type PhaseInput } from "./phase.ts";
import type { ProcessGroups } from "./processes.ts";

/** A cost estimate pricing each resource of the state before and after the plan at `perResource` a month. */
function costEstimateOf(run: Run, ws: Workspace, perResource: number): NonNullable<Run["costEstimate"]> {
  const state = ws.stateVersions.at(-1)?.state;
  const before = state ? ((JSON.parse(state) as { resources?: unknown[] }).resources ?? []).length : 0;
  const after = Math.max(0, before + run.plan.additions - run.plan.destructions);
  const money = (n: number) => n.toFixed(2);
  return {
    id: newId("ce"),
    runId: run.id,
    status: "finished",
    resourcesCount: after,
    matchedResourcesCount: perResource > 0 ? after : 0,
    priorMonthlyCost: money(before * perResource),
    proposedMonthlyCost: money(after * perResource),
    deltaMonthlyCost: money((after - before) * perResource),
  };
}

/** What the queue needs besides the server context. */
export interface RunQueueDeps {
  tofu: { binary: string; cliConfig: string };
  workRoot: string;
  processes: ProcessGroups;
}

/**
 * Runs as TFC runs them: one run at a time holds a workspace (and its lock) from plan to apply,
 * later runs wait `pending`; plan-only runs plan at once beside it. A workspace locked by a user
 * starts nothing until unlocked. Every step is asynchronous, so `POST /runs` answers `pending`.
 */
export class RunQueue {
  private readonly work = new Set<Promise<void>>();
  /** The phase each run is executing now (plan or apply), by run id. */
  private readonly active = new Map<string, Promise<void>>();
  private stopped = false;

  constructor(
    private readonly ctx: ServerContext,
    private readonly deps: RunQueueDeps,
  ) {}

  /** Creates a pending run and lets the workspace's queue move. */
  create(fields: Parameters<ServerContext["store"]["addRun"]>[0]): Run {
    const run = this.ctx.store.addRun(fields);
    this.schedule(run.workspaceId);
    return run;
  }

  /** Starts what can start on a workspace (soon, not in the caller's request). */
  schedule(workspaceId: string): void {
    setImmediate(() => this.advance(workspaceId));
  }

  /** The apply action: only a run waiting for confirmation (409 otherwise). */
  confirm(run: Run): void {
    if (!runActions(run)["is-confirmable"]) throw new ApiError(409, "conflict", `Run ${run.id} is ${run.status}: it is not waiting for confirmation`);
    setRunStatus(run, "confirmed");
    this.track(run, this.applyPhase(run));
  }

  /** The discard action: a run waiting for confirmation (or still pending), 409 otherwise. */
  discard(run: Run): void {
    if (!runActions(run)["is-discardable"]) throw new ApiError(409, "conflict", `Run ${run.id} is ${run.status}: it cannot be discarded`);
    this.end(run, "discarded");
  }

  /**
   * The cancel action: a run planning, applying or queued (409 otherwise). Asynchronous as in TFC:
   * tofu is interrupted, and the run becomes `canceled` once its processes have ended.
   */
  cancel(run: Run, force: boolean): void {
    if (!runActions(run)["is-cancelable"] || run.abort.signal.aborted) throw new ApiError(409, "conflict", `Run ${run.id} is ${run.status}: it cannot be canceled`);
    const status = force ? "force_canceled" : "canceled";
    const phase = this.active.get(run.id);
    run.abort.abort();
    if (phase) void phase.finally(() => this.end(run, status));
    else this.end(run, status);
  }

  /** Stops every run (their tofu gets SIGINT, then SIGKILL) and waits for them. */
  async stop(): Promise<void> {
    this.stopped = true;
    for (const run of this.ctx.store.runs.values()) run.abort.abort();
    await Promise.allSettled([...this.work]);
  }

  private advance(workspaceId: string): void {
    const ws = this.ctx.store.workspaces.get(workspaceId);
    if (this.stopped || !ws) return;
    const pending = [...this.ctx.store.runs.values()].filter((r) => r.workspaceId === ws.id && r.status === "pending");
    for (const run of pending.filter((r) => r.planOnly)) this.startPlan(run, ws);
    const next = pending.find((r) => !r.planOnly);
    if (!next || ws.lockedBy) return;
    ws.lockedBy = { type: "runs", id: next.id };
    this.startPlan(next, ws);
  }

  private startPlan(run: Run, ws: Workspace): void {
    setRunStatus(run, "plan_queued");
    setPhaseStatus(run.plan, "queued");
    this.track(run, this.planPhase(run, ws));
  }

  /** Keeps a phase's promise until it settles (stop waits for them); an exception errors the run. */
  private track(run: Run, p: Promise<void>): void {
    const tracked = p
      .catch((err) => this.fail(run, `Error: ${err instanceof Error ? err.message : String(err)}\n`))
      .finally(() => {
        this.work.delete(tracked);
        if (this.active.get(run.id) === tracked) this.active.delete(run.id);
      });
    this.work.add(tracked);
    this.active.set(run.id, tracked);
  }

  private async planPhase(run: Run, ws: Workspace): Promise<void> {
    setRunStatus(run, "planning");
    setPhaseStatus(run.plan, "running");
    if (this.ctx.faults.runsNeverFinish) return this.hang(run);
    const refusal = this.refusal(run, ws);
    if (refusal) return this.fail(run, refusal);
    const result = await executePlan(this.phaseInput(run, ws, "plan"));
    if (run.abort.signal.aborted) return;
    if (!result.ok) return this.fail(run);
    Object.assign(run.plan, result.counts, { hasChanges: result.hasChanges });
    Object.assign(run.apply, { additions: 0, changes: 0, destructions: 0 });
    run.hasChanges = result.hasChanges;
    run.planFile = result.planFile;
    run.plan.jsonSecret = this.ctx.store.addBlob("application/json", result.planJson ?? "{}");
    setPhaseStatus(run.plan, "finished");
    if (!result.hasChanges || run.planOnly) {
      setPhaseStatus(run.apply, "unreachable");
      return this.end(run, "planned_and_finished");
    }
    setRunStatus(run, "planned");
    if (this.ctx.variants.costEstimation) {
      setRunStatus(run, "cost_estimating");
      run.costEstimate = costEstimateOf(run, ws, this.ctx.variants.monthlyCostPerResource ?? 0);
      setRunStatus(run, "cost_estimated");
    }
    if (this.ctx.variants.policyChecks || this.ctx.variants.policySoftFails) {
      setRunStatus(run, "policy_checking");
      const soft = this.ctx.variants.policySoftFails === true;
      run.policyCheck = { id: newId("polchk"), runId: run.id, status: soft ? "soft_failed" : "passed", passed: soft ? 0 : 1, softFailed: soft ? 1 : 0, hardFailed: 0 };
      if (soft) return setRunStatus(run, "policy_soft_failed");
      setRunStatus(run, "policy_checked");
    }
    if (run.autoApply) this.confirm(run);
  }

  private async applyPhase(run: Run): Promise<void> {
    const ws = this.ctx.store.workspaces.get(run.workspaceId)!;
    setRunStatus(run, "apply_queued");
    setPhaseStatus(run.apply, "queued");
    setRunStatus(run, "applying");
    setPhaseStatus(run.apply, "running");
    const result = await executeApply(this.phaseInput(run, ws, "apply"), run.planFile!);
    if (result.state && result.state !== ws.stateVersions.at(-1)?.state) {
      const parsed = JSON.parse(result.state) as { serial?: number; lineage?: string };
      ws.stateVersions.push({ id: newId("sv"), serial: parsed.serial ?? 0, lineage: parsed.lineage ?? "", state: result.state, runId: run.id, createdAt: new Date().toISOString() });
    }
    if (run.abort.signal.aborted) return;
    if (!result.ok) return this.fail(run);
    Object.assign(run.apply, { additions: run.plan.additions, changes: run.plan.changes, destructions: run.plan.destructions });
    setPhaseStatus(run.apply, "finished");
    this.end(run, "applied");
  }

  /** Why a run cannot plan here (variants 6 and 9), as the plan log says it. */
  private refusal(run: Run, ws: Workspace): string | undefined {
    const cv = this.ctx.store.configurationVersions.get(run.configurationVersionId);
    if (cv?.status !== "uploaded" || !cv.tarball) return `Error: configuration version ${run.configurationVersionId} has not been uploaded (status ${cv?.status}).\n`;
    const versions = this.ctx.variants.installableVersions;
    if (versions && ws.terraformVersion !== "latest" && !versions.includes(ws.terraformVersion)) {
      return `Error: Terraform ${ws.terraformVersion} could not be installed: this server offers ${versions.join(", ")}.\n`;
    }
    return undefined;
  }

  private phaseInput(run: Run, ws: Workspace, phase: "plan" | "apply"): PhaseInput {
    const cv = this.ctx.store.configurationVersions.get(run.configurationVersionId)!;
    return {
      run,
      workspace: ws,
      tarball: cv.tarball!,
      variables: this.ctx.store.variablesOf(ws.id),
      tofu: this.deps.tofu,
      variants: this.ctx.variants,
      workRoot: this.deps.workRoot,
      processes: this.deps.processes,
      log: (text) => this.ctx.store.appendLog(phase === "plan" ? run.plan : run.apply, text),
    };
  }

  /** A run that never finishes: it stays `planning` until canceled or the server stops. */
  private hang(run: Run): Promise<void> {
    return new Promise((resolve) => run.abort.signal.addEventListener("abort", () => resolve(), { once: true }));
  }

  private fail(run: Run, logText?: string): void {
    if (run.abort.signal.aborted || ["errored", "canceled", "force_canceled", "discarded"].includes(run.status)) return;
    if (logText) this.ctx.store.appendLog(run.status === "applying" ? run.apply : run.plan, logText);
    setPhaseStatus(run.status === "applying" ? run.apply : run.plan, "errored");
    this.end(run, "errored");
  }

  /** Ends a run: its final status, its tofu stopped, the workspace released for the next run. */
  private end(run: Run, status: Run["status"]): void {
    setRunStatus(run, status);
    if (status !== "applied" && status !== "planned_and_finished" && status !== "errored") {
      for (const phase of [run.plan, run.apply]) if (!["finished", "errored", "unreachable"].includes(phase.status)) setPhaseStatus(phase, "canceled");
      run.abort.abort();
    }
    const ws = this.ctx.store.workspaces.get(run.workspaceId);
    if (ws?.lockedBy?.type === "runs" && ws.lockedBy.id === run.id) ws.lockedBy = undefined;
    if (ws) this.schedule(ws.id);
  }
}
