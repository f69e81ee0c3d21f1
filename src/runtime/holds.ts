import { createHash } from "node:crypto";
import { readFileSync, rmSync, writeFileSync, renameSync } from "node:fs";
import { join } from "node:path";
import type { ChangeSummary, ResourceChange } from "../driver/types.ts";
import type { PlanJson } from "../task/guards.ts";

/** A held task's file in its folder: the hold (or the rejected inputs), kept across restarts. */
export const HOLD_FILE = ".cts-hold.json";

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

/**
 * Holds of every task: in memory, in a file in the task's folder (a restart keeps them), and told to
 * an observer (high availability stores them in Consul, so a new leader knows them too).
 */
export class Holds {
  private readonly records = new Map<string, HoldRecord>();
  private readonly loaded = new Set<string>();

  /** Told every change of a task's record (undefined: cleared). */
  private changed: (task: string, record: HoldRecord | undefined) => void = () => {};

  constructor(private readonly dirOf: (task: string) => string) {}

  /** Sets the one observer of changes (the controller forwards them to high availability). */
  observe(listener: (task: string, record: HoldRecord | undefined) => void): void {
    this.changed = listener;
  }

  /** The task's record (read from its folder the first time). */
  get(task: string): HoldRecord {
    if (!this.loaded.has(task)) {
      this.loaded.add(task);
      const fromDisk = this.read(task);
      if (fromDisk && !this.records.has(task)) this.records.set(task, fromDisk);
    }
    return this.records.get(task) ?? {};
  }

  /** The task's held plan, if any. */
  held(task: string): HeldPlan | undefined {
    return this.get(task).held;
  }

  /** Holds a plan (replacing an older hold and a rejection). */
  hold(plan: HeldPlan): void {
    this.set(plan.task, { held: plan });
  }

  /** Marks the held plan approved; returns it, or undefined when nothing is held. */
  approve(task: string, at = new Date().toISOString()): HeldPlan | undefined {
    const held = this.held(task);
    if (!held) return undefined;
    const approved = { ...held, approvedAt: at };
    this.set(task, { held: approved });
    return approved;
  }

  /** Rejects the held plan: its inputs are not planned again until they change. Returns it. */
  reject(task: string, at = new Date().toISOString()): HeldPlan | undefined {
    const held = this.held(task);
    if (!held) return undefined;
    this.set(task, { rejected: { task, hash: held.hash, rejectedAt: at } });
    return held;
  }

  /** Forgets the task's hold and rejection (applied, superseded, task deleted). */
  clear(task: string): void {
    const had = this.records.has(task);
    this.records.delete(task);
    this.loaded.add(task);
    try {
      rmSync(join(this.dirOf(task), HOLD_FILE), { force: true });
    } catch {
      /* the folder is gone with the task */
    }
    if (had) this.changed(task, undefined);
  }

  /** Takes a stored record (high availability: what the leader stored), without telling the observer. */
  restore(task: string, record: HoldRecord | undefined): void {
    this.loaded.add(task);
    if (record?.held || record?.rejected) {
      this.records.set(task, record);
      this.write(task, record);
    } else {
      this.records.delete(task);
      try {
        rmSync(join(this.dirOf(task), HOLD_FILE), { force: true });
      } catch {
        /* none */
      }
    }
  }

  /** Tasks holding a plan now. */
  heldTasks(): string[] {
    return [...this.records.entries()].filter(([, r]) => r.held).map(([t]) => t);
  }

  private set(task: string, record: HoldRecord): void {
    this.loaded.add(task);
    this.records.set(task, record);
    this.write(task, record);
    this.changed(task, record);
  }

  private write(task: string, record: HoldRecord): void {
    try {
      const path = join(this.dirOf(task), HOLD_FILE);
      const tmp = `${path}.tmp`;
      writeFileSync(tmp, JSON.stringify(record) + "\n", { mode: 0o640 });
      renameSync(tmp, path);
    } catch {
      /* the folder does not exist yet (no run made it): memory and the observer keep it */
    }
  }

  private read(task: string): HoldRecord | undefined {
    try {
      const value = JSON.parse(readFileSync(join(this.dirOf(task), HOLD_FILE), "utf8")) as HoldRecord;
      return isHoldRecord(value, task) ? value : undefined;
    } catch {
      return undefined;
    }
  }
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
