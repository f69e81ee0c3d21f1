import type { Problem } from "../errors/problems.ts";
import { counted } from "../values/counted.ts";

// Plan guards: what a task declares about the plans it may apply without a person looking, and
// the check of one plan against them. The check reads Terraform's JSON plan representation
// (`show -json`): only `resource_changes` (address, type, mode, change.actions) is used.

/** One entry of a plan's `resource_changes` (Terraform's JSON plan representation), as far as guards read it. */
export interface PlanResourceChange {
  address: string;
  type: string;
  mode?: "managed" | "data" | string;
  /** Set for a deposed object of a create-before-destroy replacement. */
  deposed?: string;
  change: { actions: string[]; [key: string]: unknown };
  [key: string]: unknown;
}

/** Terraform's JSON plan representation (`tofu show -json <planfile>`), as a guard predicate receives it. */
export interface PlanJson {
  format_version?: string;
  resource_changes?: PlanResourceChange[];
  [key: string]: unknown;
}

/** A guard predicate: returns the reason to hold the plan, or nothing to let it apply. */
export type PlanPredicate = (plan: PlanJson) => string | undefined | null | void | false;

/** What a task declares about the plans it may apply without review (TaskOptions.guards, the config's guards). */
export interface PlanGuards {
  /** Hold a plan that destroys more than this many resources (replacements count, as in Terraform's "N to destroy"). */
  maxDestroy?: number;
  /** Hold a plan that destroys more than this percentage (0–100) of the managed resources the state holds. */
  maxDestroyPercent?: number;
  /**
   * Resource types (`"consul_acl_policy"`, no dot) or addresses (`"module.web.local_file.pool"`,
   * `"module.web"`: a prefix up to a `.` or `[`) a plan must not leave with no instance when the state
   * had some.
   */
  neverEmpty?: string[];
  /** Your own check over the plan JSON: return a reason to hold it. Runs where the task's code runs (the synthesis worker in a daemon). */
  check?: PlanPredicate;
}

/** The guards as plain data (what crosses threads and is stored): `check` becomes a flag. */
export type GuardSettings = Omit<PlanGuards, "check"> & { check?: true };

/** When a plan waits for a person: "always", or only when a guard refuses it ("guards", the default). */
export type ApprovalMode = "always" | "guards";

/** What a plan changes, counted as guards see it. */
export interface PlanCounts {
  /** Managed resource instances the state holds before the plan. */
  existing: number;
  /** Instances the plan destroys (deletes and replacements). */
  destroy: number;
}

/** The guards a task runs with: its own win over the config's; `false` turns them off. Undefined: no guards. */
export function effectiveGuards(global: PlanGuards | GuardSettings | undefined, own: PlanGuards | GuardSettings | false | undefined): GuardSettings | undefined {
  const g = own === false ? undefined : (own ?? global);
  if (!g) return undefined;
  const plain = guardSettings(g);
  return Object.keys(plain).length ? plain : undefined;
}

/** Guards as plain data: the predicate becomes `check: true`. */
export function guardSettings(g: PlanGuards | GuardSettings): GuardSettings {
  const { check, ...rest } = g as PlanGuards;
  const out: GuardSettings = {};
  if (rest.maxDestroy !== undefined) out.maxDestroy = rest.maxDestroy;
  if (rest.maxDestroyPercent !== undefined) out.maxDestroyPercent = rest.maxDestroyPercent;
  if (rest.neverEmpty !== undefined) out.neverEmpty = [...rest.neverEmpty];
  if (check !== undefined) out.check = true;
  return out;
}

/** Problems of a guards declaration (`{ maxDestroy?, maxDestroyPercent?, neverEmpty?, check? }` or false). */
export function guardProblems(g: unknown, at: string): Problem[] {
  if (g === false || g === undefined) return [];
  if (!g || typeof g !== "object" || Array.isArray(g))
    return [{ field: at, message: "must be an object like { maxDestroy: 3, maxDestroyPercent: 20, neverEmpty: [\"local_file\"], check: (plan) => … } or false." }];
  const p: Problem[] = [];
  const known = new Set(["maxDestroy", "maxDestroyPercent", "neverEmpty", "check"]);
  for (const key of Object.keys(g)) if (!known.has(key)) p.push({ field: `${at}.${key}`, message: "is not a guard. Use maxDestroy, maxDestroyPercent, neverEmpty or check." });
  const { maxDestroy, maxDestroyPercent, neverEmpty, check } = g as Record<string, unknown>;
  if (maxDestroy !== undefined && !(Number.isInteger(maxDestroy) && (maxDestroy as number) >= 0))
    p.push({ field: `${at}.maxDestroy`, message: `must be a whole number ≥ 0 (got ${JSON.stringify(maxDestroy)}).` });
  if (maxDestroyPercent !== undefined && !(typeof maxDestroyPercent === "number" && Number.isFinite(maxDestroyPercent) && maxDestroyPercent >= 0 && maxDestroyPercent <= 100))
    p.push({ field: `${at}.maxDestroyPercent`, message: `must be a number from 0 to 100 (got ${JSON.stringify(maxDestroyPercent)}).` });
  if (neverEmpty !== undefined) {
    if (!Array.isArray(neverEmpty)) p.push({ field: `${at}.neverEmpty`, message: 'must be a list of resource types or addresses, e.g. ["local_file", "module.web.consul_service.pool"].' });
    else
      neverEmpty.forEach((n, i) => {
        if (typeof n !== "string" || !n.trim() || /\s/.test(n)) p.push({ field: `${at}.neverEmpty[${i}]`, message: `must be a resource type or address without spaces (got ${JSON.stringify(n)}).` });
      });
  }
  if (check !== undefined && check !== true && typeof check !== "function") p.push({ field: `${at}.check`, message: "must be a function (plan) => reason | undefined." });
  return p;
}

/** Problems of an `approval` option. */
export function approvalProblems(a: unknown, at: string): Problem[] {
  if (a === undefined || a === "always" || a === "guards") return [];
  return [{ field: at, message: `must be "always" (every plan waits for \`cts approve\`) or "guards" (only plans a guard refuses; the default), got ${JSON.stringify(a)}.` }];
}

const isManaged = (rc: PlanResourceChange) => (rc.mode ?? "managed") === "managed";
const existed = (rc: PlanResourceChange) => !(rc.change.actions.length === 1 && rc.change.actions[0] === "create");
const destroys = (rc: PlanResourceChange) => rc.change.actions.includes("delete");
const survives = (rc: PlanResourceChange) => !(rc.change.actions.length === 1 && rc.change.actions[0] === "delete");

/** The managed resource changes of a plan (data sources and malformed entries left out). */
function managedChanges(plan: PlanJson): PlanResourceChange[] {
  const list = Array.isArray(plan.resource_changes) ? plan.resource_changes : [];
  return list.filter((rc) => rc && typeof rc === "object" && rc.change && Array.isArray(rc.change.actions) && isManaged(rc));
}

/** How many managed instances the state held before the plan, and how many the plan destroys. */
export function planCounts(plan: PlanJson): PlanCounts {
  const managed = managedChanges(plan);
  // A deposed object is a second copy of an instance that is already counted.
  return { existing: managed.filter((rc) => !rc.deposed && existed(rc)).length, destroy: managed.filter((rc) => !rc.deposed && destroys(rc)).length };
}

/** Whether a resource change belongs to a `neverEmpty` name: a type (no dot) or an address prefix ending at `.` or `[`. */
export function matchesName(rc: PlanResourceChange, name: string): boolean {
  if (!name.includes(".")) return rc.type === name;
  if (rc.address === name) return true;
  return rc.address.startsWith(name) && (rc.address[name.length] === "." || rc.address[name.length] === "[");
}

/**
 * The reasons a plan breaks the built-in guards (empty: it may apply). The predicate is not run here:
 * it lives with the task's code (see `runPredicate`).
 */
export function guardViolations(plan: PlanJson, guards: GuardSettings): string[] {
  const reasons: string[] = [];
  const { existing, destroy } = planCounts(plan);
  if (guards.maxDestroy !== undefined && destroy > guards.maxDestroy)
    reasons.push(`the plan destroys ${destroy} resource${destroy === 1 ? "" : "s"}, more than maxDestroy (${guards.maxDestroy})`);
  if (guards.maxDestroyPercent !== undefined && existing > 0) {
    const pct = (destroy / existing) * 100;
    if (pct > guards.maxDestroyPercent)
      reasons.push(`the plan destroys ${destroy} of ${counted(existing, "resource")} (${formatPercent(pct)} %), more than maxDestroyPercent (${guards.maxDestroyPercent} %)`);
  }
  if (guards.neverEmpty?.length) {
    const managed = managedChanges(plan).filter((rc) => !rc.deposed);
    for (const name of guards.neverEmpty) {
      const matched = managed.filter((rc) => matchesName(rc, name));
      const before = matched.filter(existed).length;
      const after = matched.filter(survives).length;
      if (before > 0 && after === 0) reasons.push(`the plan leaves ${name} empty (${before} instance${before === 1 ? "" : "s"} now, none after; neverEmpty)`);
    }
  }
  return reasons;
}

/** Runs a guard predicate: its reason, or a reason naming what it threw (a check that fails never lets a plan through). */
export function runPredicate(check: PlanPredicate, plan: PlanJson): string | undefined {
  try {
    const r = check(plan);
    if (r === undefined || r === null || r === false || r === "") return undefined;
    return typeof r === "string" ? `guards.check: ${r}` : `guards.check returned ${typeof r}, not a reason string; held to be safe`;
  } catch (err) {
    return `guards.check threw: ${err instanceof Error ? err.message : String(err)}; held to be safe`;
  }
}

function formatPercent(n: number): string {
  return Number.isInteger(n) ? String(n) : n.toFixed(1);
}
