import { createHash, randomBytes } from "node:crypto";
import type { ChangeSummary, ResourceChange, RunChecks, TaskOutputs } from "../driver/types.ts";
import { isTaskOutputs } from "../driver/outputs.ts";
import type { PlanJson } from "../task/guards.ts";
import type { ModuleTaskSpec } from "../synth/task-ref.ts";

/**
 * What a task's last successful apply was made of: the no-op skip's key and the condition's count.
 * Without a key, an apply was started and may not have finished: only the count it was about to
 * apply is known (the infrastructure may hold those instances, so a drop to none is still checked).
 */
export interface AppliedRecord {
  /** The synthesized JSON's hash (with the template values' digest when the task reads templates). */
  key?: string;
  /** How many instances or catalog services the condition held (the empty-data check). */
  count?: number;
  /**
   * The fingerprint of the Terraform state right after that apply (state/terraform-states.ts): a
   * skip checks it is still there, so a state that is gone or was replaced is never skipped.
   */
  state?: string;
}

/** A stored applied record, as a file or KV (writable by others) may hold it. */
export function isAppliedRecord(v: unknown): v is AppliedRecord {
  if (!v || typeof v !== "object") return false;
  const r = v as Record<string, unknown>;
  if (r.key !== undefined && (typeof r.key !== "string" || r.key.length === 0 || r.key.length > 200)) return false;
  if (r.count !== undefined && !(typeof r.count === "number" && Number.isSafeInteger(r.count) && r.count >= 0)) return false;
  if (r.state !== undefined && (typeof r.state !== "string" || r.state.length === 0 || r.state.length > 300)) return false;
  return r.key !== undefined || r.count !== undefined; // a keyless record is an apply under way: its count only
}

/** A change made to a task at run time (API), for the store that keeps task records. */
export interface TaskChange {
  kind: "created" | "replaced" | "enabled" | "disabled" | "deleted";
  task: string;
  origin: "config" | "api";
}

/**
 * What the cluster remembers about one task beyond the config files: a task created through the
 * API (with its spec), an enabled flag changed through the API, or a config task deleted through
 * the API (a tombstone, so a new leader does not bring it back).
 */
export interface StoredTask {
  name: string;
  origin: "config" | "api";
  enabled: boolean;
  /** The plain-data declaration of a task created through the API. */
  spec?: ModuleTaskSpec;
  /** A config task deleted through the API. */
  deleted?: true;
  /** When it was written (ISO time). */
  updated_at?: string;
}

/** One run of a task, in CTS's event shape (as the API returns it). */
export interface TaskEvent {
  id: string;
  success: boolean;
  start_time: string;
  end_time: string;
  task_name: string;
  /** Beyond CTS: `at` and `stack` name the user's code (file:line:column, first frames) when a task's code threw. */
  error: { message: string; at?: string; stack?: string[] } | null;
  config: { source?: string; services?: string[]; providers?: string[] };
  /** Beyond CTS: what the run did ("applied", "no-op" when the JSON was unchanged, "planned", "destroyed"). */
  outcome?: "applied" | "no-op" | "planned" | "destroyed" | "failed" | "cancelled" | "drift" | "held" | "rejected" | "approved" | "skipped";
  /** Beyond CTS: resource changes of the run (of a drift check: what the plan found). */
  changes?: { add: number; change: number; destroy: number };
  /**
   * Beyond CTS: the resources behind `changes`, by address, with Terraform's action ("create",
   * "update", "delete", "replace", …); at most 100. Scrubbed like the rest of the event.
   */
  resources?: Array<{ address: string; action: string }>;
  /** Beyond CTS, Terraform Cloud driver: the run's page (also when the run failed, was discarded or waits for confirmation). */
  run_url?: string;
  /** Beyond CTS, a plan held for approval (outcome "held"): why, and since when. `changes`/`resources` say what it would change. */
  hold?: { reasons: string[]; why: "guards" | "always"; heldAt: string };
  /**
   * Beyond CTS, Terraform Cloud driver: the run's own checks in Terraform Cloud, when it had them:
   * its policy checks added up (worst status; passed, failed: hard, soft, advisory) and its cost
   * estimate (prior, proposed and delta monthly cost).
   */
  checks?: RunChecks;
  /** Beyond CTS: the Terraform state this task had applied to was gone or replaced when the run started (why it was not skipped). */
  state_lost?: string;
  /**
   * Beyond CTS: an apply of this task could not save its Terraform state, or lost its state lock
   * (TERRAFORM_STATE_NOT_SAVED: two Terraforms on one state, e.g. a stalled leader): that apply's
   * error. On the run that failed so, or on the next apply, which planned with refresh.
   */
  state_not_saved?: string;
  /**
   * Beyond CTS, with `state_not_saved`: what that apply had made (from its errored.tfstate) that
   * the saved state does not hold, by address and id — infrastructure no state tracks. On the
   * failed run: everything it had made; on the next apply: what is still outside the saved state.
   */
  outside_state?: Array<{ address: string; id?: string }>;
  /** Beyond CTS, drift checks only: whether the drift was corrected, and what that apply changed. */
  drift?: { corrected: boolean; applied?: { add: number; change: number; destroy: number } };
  /**
   * Beyond CTS, a run that applied or destroyed: the task's Terraform outputs after it (sensitive
   * values redacted); left out when they take more than 16 KiB (`cts task outputs` shows them).
   */
  outputs?: TaskOutputs;
}

/** A plan that waits for a person: made, checked, not applied. */
export interface HeldPlan {
  task: string;
  /** Hash of the synthesized JSON the plan was made from (the inputs it applies). */
  hash: string;
  /** The driver's handle on the kept plan (the local driver's plan file). */
  ref: string;
  /** Digest of the plan's resource changes: approving applies only a plan with this digest. */
  digest: string;
  /** Why it is held: the guards it breaks, or the task's `approval: "always"`. */
  reasons: string[];
  /** "guards": a guard refused the plan; "always": the task wants every plan approved. */
  why: "guards" | "always";
  summary: ChangeSummary;
  /** The resources it changes, by address (at most 100). */
  resources: ResourceChange[];
  /** When it was held (ISO time). */
  heldAt: string;
  /** Set by `cts approve`: the next run applies this plan (or, if the plan had to be made again, one with the same digest). */
  approvedAt?: string;
}

/** Inputs whose plan was rejected: not planned again until the inputs change. */
export interface RejectedInputs {
  task: string;
  hash: string;
  rejectedAt: string;
}

/** What is stored per task: a hold, or the inputs of a rejected one. */
export interface HoldRecord {
  held?: HeldPlan;
  rejected?: RejectedInputs;
}

/**
 * The digest of a plan's resource changes (address, actions, before and after values): two plans
 * with the same digest make the same changes. Sensitive values only enter the hash.
 */
export function planDigest(plan: PlanJson | Record<string, unknown>): string {
  const list = Array.isArray((plan as PlanJson).resource_changes) ? (plan as PlanJson).resource_changes! : [];
  const parts = list.map((rc) => ({ a: rc.address, d: rc.deposed ?? null, x: rc.change?.actions ?? [], b: rc.change?.before ?? null, f: rc.change?.after ?? null, u: rc.change?.after_unknown ?? null }));
  parts.sort((p, q) => (p.a + "\u0000" + (p.d ?? "") < q.a + "\u0000" + (q.d ?? "") ? -1 : 1));
  return createHash("sha256").update(JSON.stringify(parts)).digest("hex");
}

/** Whether a stored value (a file, a KV entry: both writable by others) is a hold record of `task`. */
export function isHoldRecord(value: unknown, task: string): value is HoldRecord {
  if (!value || typeof value !== "object") return false;
  const { held, rejected } = value as HoldRecord;
  if (held !== undefined) {
    if (!held || typeof held !== "object" || held.task !== task || typeof held.hash !== "string" || typeof held.ref !== "string" || typeof held.digest !== "string") return false;
    if (!Array.isArray(held.reasons) || !held.summary || typeof held.summary !== "object" || !Array.isArray(held.resources ?? [])) return false;
  }
  if (rejected !== undefined && (!rejected || typeof rejected !== "object" || rejected.task !== task || typeof rejected.hash !== "string")) return false;
  return held !== undefined || rejected !== undefined;
}

/**
 * What a drift check found:
 * - `in-sync`: the plan against the last applied JSON changes nothing;
 * - `drifted`: it would change something while the inputs are unchanged (changed out of band);
 * - `corrected`: drifted, and `correct: true` applied the last applied JSON again;
 * - `inputs-changed`: the inputs differ from the last apply, so a plan cannot tell drift from a
 *   pending change (the task's next run applies it);
 * - `not-applied`: this process has not applied the task yet, so there is nothing to compare with;
 * - `failed`: the check itself failed (see `error`).
 */
export type DriftState = "in-sync" | "drifted" | "corrected" | "inputs-changed" | "not-applied" | "failed";

/** The last drift check of a task. */
export interface DriftResult {
  state: DriftState;
  /** When the check ended (ISO time). */
  checkedAt: string;
  /** What the plan would change (drifted, corrected). */
  changes?: ChangeSummary;
  /** What the correcting apply changed. */
  applied?: ChangeSummary;
  /** Why the check failed. */
  error?: string;
}

/** A task's latest Terraform outputs (sensitive values redacted), and the run that left them. */
export interface OutputsRecord {
  outputs: TaskOutputs;
  /** When the apply that read them ended (ISO time). */
  updatedAt: string;
  /** The run (its history record's id) that read them. */
  runId?: string;
}

/** Whether a stored value is an outputs record (files and KV are writable by others). */
export function isOutputsRecord(v: unknown): v is OutputsRecord {
  if (!v || typeof v !== "object") return false;
  const r = v as Record<string, unknown>;
  return isTaskOutputs(r.outputs) && typeof r.updatedAt === "string" && (r.runId === undefined || typeof r.runId === "string");
}

/** What started a run (kept in its history record). */
export type RunTrigger =
  | "change" // watched data (services, catalog, KV, a template's secret) changed
  | "schedule" // a schedule condition's tick
  | "start" // the first run after cts started or began leading
  | "api" // `cts task run`, `PATCH /v1/tasks/{name}?run=now`
  | "approve" // `cts approve`
  | "task-change" // created or enabled through the API
  | "state-lost" // its Terraform state was gone or replaced
  | "once" // `cts once`
  | "drift-check" // a drift check found drift
  | "destroy" // a destroy (`cts task delete --destroy`)
  | "upstream"; // an upstream task of its chain applied (task chains)

/**
 * One run of a task as its history keeps it (`GET /v1/tasks/{name}/runs`, `cts history`): beyond
 * CTS's 5 events, every run, for as long as the retention setting says. Scrubbed like an event.
 */
export interface RunRecord {
  /** Sortable and unique: `<ISO start time>-<8 hex>` (the paging cursor). */
  id: string;
  task: string;
  trigger: RunTrigger;
  /** applied | no-op | failed | held | rejected | cancelled | destroyed | drift … (as the event's outcome). */
  outcome: string;
  success: boolean;
  start_time: string;
  end_time: string;
  duration_ms: number;
  /** The sha256 of the synthesized Terraform JSON the run was given (absent when it failed before). */
  inputs_digest?: string;
  /** What the plan or apply changed, and the resources by address (at most 100). */
  plan?: { changes: { add: number; change: number; destroy: number }; resources: Array<{ address: string; action: string }> };
  /** Terraform Cloud driver: the run's page. */
  run_url?: string;
  /** Why it failed, was held or refused. */
  error?: string;
}

/** How long a task's runs are kept: the newest `keep`, none older than `maxAgeMs`. */
export interface RunRetention {
  keep: number;
  maxAgeMs: number;
}

/** Whether a stored value is a run record of `task`. */
export function isRunRecord(v: unknown, task: string): v is RunRecord {
  if (!v || typeof v !== "object") return false;
  const r = v as Record<string, unknown>;
  return (
    r.task === task &&
    typeof r.id === "string" &&
    RUN_ID.test(r.id) &&
    typeof r.trigger === "string" &&
    typeof r.outcome === "string" &&
    typeof r.success === "boolean" &&
    typeof r.start_time === "string" &&
    typeof r.end_time === "string" &&
    typeof r.duration_ms === "number"
  );
}

/** A run id: the start time (ms, UTC, sortable as text) and 8 hex characters. */
export const RUN_ID = /^\d{8}T\d{9}Z-[0-9a-f]{8}$/;

/** A new run id for a run started at `start`. */
export function runId(start: Date): string {
  const iso = start.toISOString(); // 2026-11-28T04:38:18.123Z
  return `${iso.slice(0, 4)}${iso.slice(5, 7)}${iso.slice(8, 10)}T${iso.slice(11, 13)}${iso.slice(14, 16)}${iso.slice(17, 19)}${iso.slice(20, 23)}Z-${randomBytes(4).toString("hex")}`;
}

/**
 * A task's runs after a new one (`runs` newest first): what the retention keeps, and the ids it
 * drops (the stores delete those).
 */
export function retainRuns(runs: RunRecord[], retention: RunRetention, now: number): { kept: RunRecord[]; dropped: string[] } {
  const kept: RunRecord[] = [];
  const dropped: string[] = [];
  for (const r of runs) {
    const age = now - Date.parse(r.start_time);
    if (kept.length < retention.keep && !(age > retention.maxAgeMs)) kept.push(r);
    else dropped.push(r.id);
  }
  return { kept, dropped };
}
