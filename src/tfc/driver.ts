import { resolve } from "node:path";
import { ownFolder } from "../driver/safe-files.ts";
import { createKeyedSerializer } from "../driver/serial.ts";
import { taskFolder } from "../driver/task-name.ts";
import type { Driver, RunOptions, RunResult, SavedPlan, TaskWorkspace } from "../driver/types.ts";
import { CtsError, messageOf } from "../errors/cts-error.ts";
import { pause } from "../time/pause.ts";
import { knownSecrets } from "../secrets/redactor.ts";
import { TfcClient, type TfcClientOptions } from "./client.ts";
import { stageRootModule, type RequiredProviders } from "./root-module.ts";
import { runOutcome } from "./run-outcome.ts";
import { redactOutputs } from "../driver/outputs.ts";
import { awaitsPerson, isFinal } from "./runs.ts";
import { heldPlanJson, heldRunGone, isRunId, wasConfirmed } from "./held-runs.ts";
import { checksWords, runChecks } from "./run-checks.ts";
import { ensureTaskWorkspace, type WorkspacePolicy } from "./task-workspace.ts";
import { syncVariables, taskVariables, variablesFingerprint } from "./task-variables.ts";
import { TFC_TERRAFORM_CONSTRAINT } from "./supported-versions.ts";
import { newestCompatibleVersion } from "./terraform-versions.ts";
import type { Run, Workspace } from "./types.ts";
import type { Metrics } from "../metrics/metrics.ts";

/** What the Terraform Cloud driver is made with. */
export interface TfcDriverOptions extends WorkspacePolicy {
  /** How to reach the API (hostname, token, TLS, retries); or a client made already. */
  client: TfcClient | TfcClientOptions;
  /** Where each task's local folder is (`<workingDir>/<task>`: the applied hash of the no-op skip). */
  workingDir: string;
  requiredProviders?: RequiredProviders;
  /** A run is followed this long before TFC_RUN_TIMEOUT (default 30 min; RunOptions.timeoutMs wins). */
  runTimeoutMs?: number;
  /** A workspace locked by someone else is waited for this long before TFC_WORKSPACE_LOCKED (default 5 min). */
  lockTimeoutMs?: number;
  /** Between reads of a run, an upload or a lock (default 1 s). */
  pollIntervalMs?: number;
  /** The driver's log, per task (never given a secret: every line is scrubbed). */
  log?: (task: string, line: string) => void;
  /** Where plan and apply durations go (read from the run's status timestamps). */
  metrics?: Pick<Metrics, "phase">;
}

/** "hold": an apply whose run waits for confirmation, for the plan guards (planToApply). */
type Kind = "apply" | "plan" | "destroy" | "hold";

/** What the driver remembers of a task between runs (in memory: a restart finds it all again). */
interface TaskMemory {
  workspace?: Workspace;
  /** The variables last written to the workspace. */
  variables?: string;
  /** A run of ours left waiting for confirmation: discarded when the next change arrives. */
  waiting?: string;
  /** The workspace's runs were searched for one of ours left waiting by an earlier cts (once per start). */
  searched?: boolean;
}

/**
 * The Terraform Cloud / Enterprise driver: each task is the workspace `<prefix><task>`, found or
 * created with the task's settings (task-workspace.ts). An apply or destroy writes the task's
 * variables to the workspace (task-variables.ts), uploads the task's root module as a
 * configuration version (root-module.ts), waits out a lock someone else holds, queues a run
 * (auto-apply unless the workspace applies manually), follows it to its end and answers with its
 * outcome and URL (run-outcome.ts). A plan is a speculative plan-only run, which never locks the
 * workspace and is not listed among its runs. One operation per task at a time; tasks in parallel.
 *
 * Plan guards and approvals (SavedPlans): `planToApply` queues the run without auto-apply and
 * stops where it waits for confirmation, answering with its plan's JSON and the run id as the
 * ref; `applyPlan` confirms exactly that run and follows it to its end; `discardPlan` discards it.
 */
export class TfcDriver implements Driver {
  readonly client: TfcClient;
  private readonly memory = new Map<string, TaskMemory>();
  private readonly tasks = createKeyedSerializer();
  private readonly root: string;
  /** The version new workspaces get when their task names none: looked up once, on the first create that needs it. */
  private defaultVersion: Promise<string | undefined> | undefined;

  constructor(private readonly options: TfcDriverOptions) {
    this.client = options.client instanceof TfcClient ? options.client : new TfcClient(options.client);
    this.root = resolve(options.workingDir);
  }

  apply(ws: TaskWorkspace, opts?: RunOptions): Promise<RunResult> {
    return this.run("apply", ws, opts);
  }

  plan(ws: TaskWorkspace, opts?: RunOptions): Promise<RunResult> {
    return this.run("plan", ws, opts);
  }

  destroy(ws: TaskWorkspace, opts?: RunOptions): Promise<RunResult> {
    return this.run("destroy", ws, opts);
  }

  /**
   * Queues the task's run without auto-apply and follows it until it is planned and waits for
   * confirmation (cost estimate and policy checks included); answers with the plan's JSON and the
   * run id as the ref, the run left waiting. A plan without changes ends the run (`planned_and_finished`).
   */
  async planToApply(ws: TaskWorkspace, opts?: RunOptions): Promise<SavedPlan> {
    return (await this.run("hold", ws, opts)) as SavedPlan;
  }

  /**
   * Confirms the held run `ref` (its plan, nothing planned anew) and follows it to its end. A run
   * that no longer waits for confirmation is PLAN_NOT_FOUND (gone, or discarded or canceled in
   * Terraform Cloud) or PLAN_STALE (errored, or it cannot be confirmed any more); one someone
   * already confirmed in Terraform Cloud is followed to its end.
   */
  applyPlan(ws: TaskWorkspace, ref: string, opts: RunOptions = {}): Promise<RunResult> {
    let dir: string;
    try {
      dir = this.taskDir(ws.task);
    } catch (err) {
      return Promise.reject(err);
    }
    return this.tasks.run(ws.task, () => this.confirmHeld(ws, ref, dir, opts));
  }

  /** Discards the held run `ref` (rejected, or superseded by a newer change); a run gone or no longer waiting is left as it is. */
  discardPlan(task: string, ref: string): Promise<void> {
    return this.tasks.run(task, async () => {
      const mem = this.memory.get(task);
      if (mem?.waiting === ref) mem.waiting = undefined;
      if (!isRunId(ref)) return;
      const run = await this.client.runs.read(ref).catch(() => undefined);
      if (!run || !run.actions.isDiscardable || wasConfirmed(run)) return;
      await this.client.runs.discard(ref, `Discarded by cts: the plan held for task ${task} was rejected or superseded by a newer change`).catch(() => undefined);
      this.options.log?.(task, `run ${ref} discarded (its held plan was rejected or superseded)`);
    });
  }

  taskDir(task: string): string {
    return taskFolder(this.root, task);
  }

  private async makeTaskDir(task: string): Promise<string> {
    const dir = this.taskDir(task);
    ownFolder(dir, task);
    return dir;
  }

  /** Forgets what it knew of a task (deleted) or of all (leadership lost); the workspaces stay. */
  async coolDown(task?: string): Promise<void> {
    if (task === undefined) this.memory.clear();
    else this.memory.delete(task);
  }

  /** Runs execute in Terraform Cloud, each with its workspace's version: this says where. */
  async version(): Promise<string> {
    return `terraform-cloud (${this.client.origin})`;
  }

  async close(): Promise<void> {
    this.client.close();
  }

  /** One operation of a task, queued behind its previous one. */
  private run(kind: Kind, ws: TaskWorkspace, opts: RunOptions = {}): Promise<RunResult | SavedPlan> {
    let dir: string;
    try {
      dir = this.taskDir(ws.task);
    } catch (err) {
      return Promise.reject(err);
    }
    return this.tasks.run(ws.task, () => this.operate(kind, ws, dir, opts));
  }

  private async operate(kind: Kind, ws: TaskWorkspace, dir: string, opts: RunOptions): Promise<RunResult | SavedPlan> {
    const { signal } = opts;
    const log = (line: string) => this.options.log?.(ws.task, knownSecrets.redact(line));
    const clock = this.client.clock;
    const started = clock.now();
    const limitMs = opts.timeoutMs ?? this.options.runTimeoutMs ?? 30 * 60_000;
    const interval = this.options.pollIntervalMs ?? 1000;
    try {
      throwIfAborted(signal, ws.task);
      await this.makeTaskDir(ws.task);
      const mem = this.taskMemory(ws.task);
      const workspace = await this.workspaceOf(ws, mem, log, signal);
      const vars = taskVariables(ws.env, ws.json);
      const fingerprint = variablesFingerprint(vars);
      if (mem.variables !== fingerprint) {
        mem.variables = undefined;
        await syncVariables(this.client, workspace.id, vars, signal);
        mem.variables = fingerprint;
      }
      if (kind !== "plan") await this.discardWaiting(mem, workspace, log, signal);
      const staged = await stageRootModule(ws.json, dir, this.options.requiredProviders, ws.task);
      let cvId: string;
      try {
        const cv = await this.client.configurationVersions.uploadDirectory(workspace.id, staged.dir, { signal, intervalMs: Math.min(interval, 500), speculative: kind === "plan" });
        cvId = cv.id;
      } finally {
        await staged.dispose();
      }
      if (kind !== "plan") await this.waitForUnlock(workspace, ws.task, log, signal, interval);
      const created = await this.client.runs.create(
        {
          workspaceId: workspace.id,
          configurationVersionId: cvId,
          message: runMessage(kind, ws.task),
          ...(kind === "plan" ? { planOnly: true } : {}),
          ...(kind === "destroy" ? { isDestroy: true } : {}),
          // Held for the plan guards: it must wait for confirmation, whatever the workspace's auto-apply says.
          ...(kind === "hold" ? { autoApply: false } : {}),
        },
        signal,
      );
      const url = this.client.runUrl(this.options.organization, workspace.name, created.id);
      log(`${kind === "plan" ? "speculative plan" : kind} run ${created.id} queued: ${url}`);
      const run = await this.follow(created, ws.task, url, signal, Math.max(1, limitMs - (clock.now() - started)), interval, log);
      if (kind !== "plan" && awaitsPerson(run)) mem.waiting = run.id;
      this.recordPhases(ws.task, kind, run);
      const result = await runOutcome(this.client, run, { task: ws.task, workspace: workspace.name, url }, { planOnly: kind === "plan" || kind === "hold", signal });
      if (kind !== "plan") await this.addChecks(result, run, log, signal);
      if (kind !== "plan" && run.status === "applied") await this.readOutputs(result, kind, workspace.id, log, signal);
      log(`run ${run.id} ${run.status}${result.changesPresent ? ` (${result.summary.add} to add, ${result.summary.change} to change, ${result.summary.destroy} to destroy)` : " (no changes)"}: ${url}`);
      if (kind !== "hold") return result;
      if (!result.changesPresent || isFinal(run)) return { ...result, changesPresent: false, plan: {}, ref: "" };
      const planId = run.planId ?? run.included.plan?.id;
      const plan = await heldPlanJson(this.client, planId, run.id, { signal, intervalMs: interval });
      log(`run ${run.id} waits for confirmation while the task's guards check its plan`);
      return { ...result, plan, ref: run.id };
    } catch (err) {
      throw this.failure(err, ws.task, signal);
    }
  }

  /** Confirms a held run and follows it to its end (applyPlan). */
  private async confirmHeld(ws: TaskWorkspace, ref: string, dir: string, opts: RunOptions): Promise<RunResult> {
    const { signal } = opts;
    const log = (line: string) => this.options.log?.(ws.task, knownSecrets.redact(line));
    const started = this.client.clock.now();
    const limitMs = opts.timeoutMs ?? this.options.runTimeoutMs ?? 30 * 60_000;
    const interval = this.options.pollIntervalMs ?? 1000;
    try {
      throwIfAborted(signal, ws.task);
      await this.makeTaskDir(ws.task);
      const mem = this.taskMemory(ws.task);
      const workspace = await this.workspaceOf(ws, mem, log, signal);
      if (!isRunId(ref)) throw heldRunGone(ws.task, ref, workspace.name, undefined);
      const read = () => this.client.runs.read(ref, signal).catch((err: unknown) => (err instanceof CtsError && err.code === "TFC_NOT_FOUND" ? undefined : Promise.reject(err)));
      let run = await read();
      if (!run || (run.workspaceId !== undefined && run.workspaceId !== workspace.id)) throw heldRunGone(ws.task, ref, workspace.name, undefined);
      const url = this.client.runUrl(this.options.organization, workspace.name, run.id);
      if (awaitsPerson(run) && run.actions.isConfirmable) {
        try {
          await this.client.runs.apply(run.id, `Approved in cts: applying the plan held for task ${ws.task}`, signal);
          log(`run ${run.id} confirmed: the held plan was approved (${url})`);
        } catch (err) {
          // Someone acted on it in between (confirmed, discarded): what it is now decides.
          if (!(err instanceof CtsError && err.code === "TFC_CONFLICT")) throw err;
          run = await read();
          if (!run || !wasConfirmed(run)) throw heldRunGone(ws.task, ref, workspace.name, run, url);
        }
      } else if (wasConfirmed(run)) {
        log(`run ${run.id} was already confirmed in Terraform Cloud; following it (${url})`);
      } else {
        throw heldRunGone(ws.task, ref, workspace.name, run, url);
      }
      if (mem.waiting === ref) mem.waiting = undefined;
      const done = await this.follow(run, ws.task, url, signal, Math.max(1, limitMs - (this.client.clock.now() - started)), interval, log);
      this.recordPhases(ws.task, "apply", done, "apply");
      const result = await runOutcome(this.client, done, { task: ws.task, workspace: workspace.name, url }, { planOnly: false, signal });
      await this.addChecks(result, done, log, signal);
      if (done.status === "applied") await this.readOutputs(result, "apply", workspace.id, log, signal);
      log(`run ${done.id} ${done.status}${result.changesPresent ? ` (${result.summary.add} to add, ${result.summary.change} to change, ${result.summary.destroy} to destroy)` : " (no changes)"}: ${url}`);
      return result;
    } catch (err) {
      throw this.failure(err, ws.task, signal);
    }
  }

  private taskMemory(task: string): TaskMemory {
    const mem = this.memory.get(task) ?? {};
    this.memory.set(task, mem);
    return mem;
  }

  /** The task's workspace: found or created (and checked) on the task's first operation, then remembered. */
  private async workspaceOf(ws: TaskWorkspace, mem: TaskMemory, log: (line: string) => void, signal: AbortSignal | undefined): Promise<Workspace> {
    if (!mem.workspace) {
      const { workspace, created } = await ensureTaskWorkspace(this.client, this.options, ws, signal, () => this.newWorkspaceVersion(log));
      mem.workspace = workspace;
      log(`workspace ${workspace.name} (${workspace.id}) ${created ? "created" : "found"}`);
    }
    return mem.workspace;
  }

  /** Terraform Cloud's policy checks and cost estimate of the run, into the result (for its event) and the log. */
  private async addChecks(result: RunResult, run: Run, log: (line: string) => void, signal: AbortSignal | undefined): Promise<void> {
    const checks = await runChecks(this.client, run, signal);
    if (!checks) return;
    result.checks = checks;
    log(`run ${run.id}: ${checksWords(checks)}`);
  }

  /**
   * After an apply: the workspace's current state version outputs (sensitive ones redacted, as
   * Terraform Cloud answers them null anyway); after a destroy, none. A failed read leaves them out
   * (the outputs kept from before stay) and is logged: the run itself succeeded.
   */
  private async readOutputs(result: RunResult, kind: Kind, workspaceId: string, log: (line: string) => void, signal: AbortSignal | undefined): Promise<void> {
    if (kind === "destroy") {
      result.outputs = {};
      return;
    }
    try {
      result.outputs = knownSecrets.redactDeep(redactOutputs(await this.client.stateOutputs(workspaceId, signal)));
    } catch (err) {
      log(`reading the workspace's state outputs failed (${messageOf(err)}); the outputs shown are from before this run`);
    }
  }

  /**
   * The Terraform version of a new workspace whose task names none, as CTS picks it: the newest
   * version the server offers that CTS's constraint allows (TFE's admin list of versions). When the
   * token may not list them (HCP Terraform; a TFE token of no site admin), the lookup fails, or none
   * fits, the workspace gets the server's default version. Looked up once per driver (a failed lookup is tried again on the next create).
   */
  private newWorkspaceVersion(log: (line: string) => void): Promise<string | undefined> {
    this.defaultVersion ??= this.client.terraformVersions().then(
      (versions) => {
        const newest = versions ? newestCompatibleVersion(versions) : undefined;
        if (newest) log(`new workspaces get Terraform ${newest}, the newest version the server offers within ${TFC_TERRAFORM_CONSTRAINT}`);
        else if (versions) log(`the server offers no Terraform version within ${TFC_TERRAFORM_CONSTRAINT}; new workspaces get the server's default version`);
        else log("the token may not list the server's Terraform versions (only a Terraform Enterprise site admin may); new workspaces get the server's default version");
        return newest;
      },
      (err: unknown) => {
        // Not kept: the next workspace created asks again.
        this.defaultVersion = undefined;
        log(`listing the server's Terraform versions failed (${messageOf(err)}); this new workspace gets the server's default version`);
        return undefined;
      },
    );
    return this.defaultVersion;
  }

  /** Follows a run to its end; a cancelled operation cancels the run in Terraform Cloud too (best effort). */
  private async follow(run: Run, task: string, url: string, signal: AbortSignal | undefined, limitMs: number, intervalMs: number, log: (line: string) => void): Promise<Run> {
    try {
      return await this.client.runs.follow(run.id, { signal, limitMs, intervalMs, onStatus: (r) => log(`run ${r.id}: ${r.status}`) });
    } catch (err) {
      if (signal?.aborted) {
        await this.client.runs.cancel(run.id, "Canceled by cts: the task's run was stopped").catch(() => this.client.runs.discard(run.id).catch(() => undefined));
        log(`run ${run.id} canceled (the task's run was stopped)`);
      }
      if (err instanceof CtsError && err.code === "TFC_RUN_TIMEOUT") throw new CtsError(err.code, err.category, `${err.message} See ${url}`, { task, cause: err, detail: { ...err.detail, url } });
      throw err;
    }
  }

  /** Plan and apply (or destroy) durations as Terraform Cloud timed them, when it says (status-timestamps). */
  private recordPhases(task: string, kind: Kind, run: Run, phases: "all" | "apply" = "all"): void {
    const at = (k: string) => {
      const t = Date.parse(run.statusTimestamps[k] ?? "");
      return Number.isFinite(t) ? t : undefined;
    };
    const span = (from: number | undefined, to: number | undefined) => (from !== undefined && to !== undefined && to >= from ? (to - from) / 1000 : undefined);
    const planned = span(at("planning-at"), at("planned-at") ?? at("planned-and-finished-at"));
    if (planned !== undefined && phases === "all") this.options.metrics?.phase(task, "plan", planned);
    const applied = span(at("applying-at"), at("applied-at"));
    if (applied !== undefined) this.options.metrics?.phase(task, kind === "destroy" ? "destroy" : "apply", applied);
  }

  /** Discards our run still waiting for confirmation (CTS does so when new changes arrive). */
  private async discardWaiting(mem: TaskMemory, workspace: Workspace, log: (line: string) => void, signal?: AbortSignal): Promise<void> {
    const ids = mem.waiting ? [mem.waiting] : [];
    mem.waiting = undefined;
    if (!mem.searched) {
      // After a restart or a failover, a run an earlier cts queued may still wait: found by its message.
      const recent = await this.client.runs.listRecent(workspace.id, 20, signal).catch(() => []);
      for (const r of recent) if (r.message.startsWith(RUN_MESSAGE_PREFIX) && awaitsPerson(r) && !ids.includes(r.id)) ids.push(r.id);
      mem.searched = true;
    }
    for (const id of ids) {
      const run = await this.client.runs.read(id, signal).catch(() => undefined);
      if (run && awaitsPerson(run) && run.actions.isDiscardable) {
        await this.client.runs.discard(id, "Discarded by cts: the task changed again", signal).catch(() => undefined);
        log(`run ${id} was still waiting for confirmation; discarded for the new change`);
      }
    }
  }

  /** Waits while someone else holds the workspace's lock, up to lockTimeoutMs. */
  private async waitForUnlock(workspace: Workspace, task: string, log: (line: string) => void, signal: AbortSignal | undefined, intervalMs: number): Promise<void> {
    const limit = this.options.lockTimeoutMs ?? 5 * 60_000;
    const clock = this.client.clock;
    const since = clock.now();
    let warned = false;
    for (;;) {
      const now = await this.client.workspaces.readById(workspace.id, signal);
      if (!now.locked) return;
      const holder = now.lockedBy ? `${now.lockedBy.type.replace(/s$/, "")} ${now.lockedBy.id}` : "someone";
      if (!warned) log(`workspace ${workspace.name} is locked by ${holder}; waiting up to ${Math.round(limit / 1000)} s`);
      warned = true;
      const left = since + limit - clock.now();
      if (left <= 0)
        throw new CtsError("TFC_WORKSPACE_LOCKED", "external", `workspace ${workspace.name} stayed locked by ${holder} for ${Math.round(limit / 1000)} s; no run was queued.`, { task, detail: { workspace: workspace.name, lockedBy: now.lockedBy ?? null } });
      if (!(await pause(Math.min(intervalMs, left), signal, clock))) throwIfAborted(signal, task);
    }
  }

  /** Errors as the runtime reads them: a stopped operation is TERRAFORM_CANCELLED; others name the task. */
  private failure(err: unknown, task: string, signal?: AbortSignal): unknown {
    if (signal?.aborted && !(err instanceof CtsError && err.code === "TERRAFORM_CANCELLED"))
      return new CtsError("TERRAFORM_CANCELLED", "external", "was cancelled; a run already queued in Terraform Cloud was canceled.", { task, cause: err });
    // The workspace may be gone or changed: find it again (and check it) on the next run.
    if (!(err instanceof CtsError) || ["TFC_NOT_FOUND", "TFC_WORKSPACE_REFUSED", "TFC_INVALID", "CTS_INTERNAL"].includes(err.code)) this.memory.delete(task);
    if (err instanceof CtsError && err.task === undefined) return new CtsError(err.code, err.category, err.message, { task, cause: err.cause ?? err, detail: err.detail });
    return err;
  }
}

function throwIfAborted(signal: AbortSignal | undefined, task: string): void {
  if (signal?.aborted) throw new CtsError("TERRAFORM_CANCELLED", "external", "was cancelled before a run was queued; nothing was changed.", { task });
}

/** How the messages of cts's runs begin (to find our own runs among a workspace's). */
const RUN_MESSAGE_PREFIX = "cts: ";

function runMessage(kind: Kind, task: string): string {
  if (kind === "hold") return `${RUN_MESSAGE_PREFIX}task ${task} changed (waits for confirmation: its plan is checked by the task's guards)`;
  return `${RUN_MESSAGE_PREFIX}${kind === "plan" ? `speculative plan of task ${task}` : kind === "destroy" ? `destroy of task ${task}` : `task ${task} changed`}`;
}

/** The driver `driver.terraformCloud` describes. */
export function createTfcDriver(options: TfcDriverOptions): TfcDriver {
  return new TfcDriver(options);
}
