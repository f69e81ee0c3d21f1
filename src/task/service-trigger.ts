import type { ServiceInstance } from "../consul/types.ts";
import type { Problem } from "../errors/problems.ts";

// Event triggers of a services condition (CTS issues #1056 and #154): a task that runs only when
// an instance registers, only when one deregisters, or when the number of instances crosses a
// line, instead of on every change. The run itself still receives the full current data.

/**
 * A count threshold ("first in, last out"): fires when the number of the condition's instances
 * crosses a line in the direction given. `above: n` fires when it rises from n or fewer to more
 * than n; `below: n` fires when it falls from n or more to fewer than n. With both, either fires
 * (`{ above: 0, below: 1 }`: the first instance arrived, or the last one left).
 */
export interface CountThreshold {
  above?: number;
  below?: number;
}

/**
 * When a services condition fires: `"change"` on any change of its data (the default, CTS's
 * behaviour), `"register"` when an instance appeared, `"deregister"` when one went away, or a
 * count threshold.
 */
export type ServicesTrigger = "change" | "register" | "deregister" | CountThreshold;

/** What the trigger compares: the identities of the condition's instances. */
export interface InstanceSnapshot {
  readonly keys: ReadonlySet<string>;
}

/**
 * An instance's identity: its node and service ID (unique per node in Consul), within its
 * datacenter and namespace. A changed address, port, tag, meta or health status keeps it.
 */
export function instanceKey(i: Pick<ServiceInstance, "nodeDatacenter" | "namespace" | "node" | "id">): string {
  return JSON.stringify([i.nodeDatacenter ?? "", i.namespace ?? "", i.node, i.id]);
}

/** The identities of a condition's instances (the data as the task receives it: filtered, health included). */
export function snapshotOf(instances: ReadonlyArray<Pick<ServiceInstance, "nodeDatacenter" | "namespace" | "node" | "id">>): InstanceSnapshot {
  return { keys: new Set(instances.map(instanceKey)) };
}

/** Whether a trigger is today's any-change trigger (nothing to compare, no snapshot kept). */
export function firesOnAnyChange(trigger: ServicesTrigger | undefined): boolean {
  return trigger === undefined || trigger === "change";
}

/**
 * Whether a change of a services condition's data fires its task, and why (undefined: it does
 * not). `prev` is the data before the change; without it (the first data cts saw) every trigger
 * fires, as every task runs once when cts starts watching it. Pure: the same snapshots, the same
 * answer.
 */
export function triggerFires(trigger: ServicesTrigger | undefined, prev: InstanceSnapshot | undefined, next: InstanceSnapshot): string | undefined {
  if (firesOnAnyChange(trigger)) return "the data changed";
  if (!prev) return "first data";
  if (trigger === "register") {
    const added = countMissing(next.keys, prev.keys);
    return added ? `${added} instance${added === 1 ? "" : "s"} registered` : undefined;
  }
  if (trigger === "deregister") {
    const gone = countMissing(prev.keys, next.keys);
    return gone ? `${gone} instance${gone === 1 ? "" : "s"} deregistered` : undefined;
  }
  const t = trigger as CountThreshold;
  const before = prev.keys.size;
  const after = next.keys.size;
  if (t.above !== undefined && before <= t.above && after > t.above) return `the count rose above ${t.above} (${before} → ${after})`;
  if (t.below !== undefined && before >= t.below && after < t.below) return `the count fell below ${t.below} (${before} → ${after})`;
  return undefined;
}

/** How many keys of `a` are not in `b`. */
function countMissing(a: ReadonlySet<string>, b: ReadonlySet<string>): number {
  let n = 0;
  for (const k of a) if (!b.has(k)) n++;
  return n;
}

/** Text of a trigger for messages, status and events. */
export function triggerText(trigger: ServicesTrigger | undefined): string {
  if (trigger === undefined || typeof trigger === "string") return trigger ?? "change";
  const parts = [...(trigger.above !== undefined ? [`above ${trigger.above}`] : []), ...(trigger.below !== undefined ? [`below ${trigger.below}`] : [])];
  return `count ${parts.join(" or ")}`;
}

/** Problems of a services condition's trigger option (`field` names it, e.g. `condition.trigger`); `hcl`: fixes in CTS HCL's spelling. */
export function triggerProblems(trigger: unknown, field: string, hcl = false): Problem[] {
  if (trigger === undefined) return [];
  const set = (key: string, n: string) => (hcl ? `${key} = ${n}` : `${key}: ${n}`);
  const fix = `Use "change" (the default), "register", "deregister", or a count threshold { ${set("above", "n")} } / { ${set("below", "n")} } (or both).`;
  if (typeof trigger === "string") {
    if (trigger === "change" || trigger === "register" || trigger === "deregister") return [];
    return [{ field, message: `'${trigger.slice(0, 40)}' is not a trigger. ${fix}` }];
  }
  if (!trigger || typeof trigger !== "object" || Array.isArray(trigger)) return [{ field, message: `must be a string or a count threshold. ${fix}` }];
  const p: Problem[] = [];
  const t = trigger as Record<string, unknown>;
  for (const key of Object.keys(t))
    if (key !== "above" && key !== "below") p.push({ field: `${field}.${key}`, message: "is not a key of a count threshold. Use above and/or below." });
  if (t.above === undefined && t.below === undefined)
    p.push({ field, message: `sets no threshold. Give ${set("above", "n")} (fires when the count rises past n) and/or ${set("below", "n")} (fires when it falls under n).` });
  const got = (v: unknown) => JSON.stringify(v)?.slice(0, 40);
  if (t.above !== undefined && !(Number.isSafeInteger(t.above) && (t.above as number) >= 0))
    p.push({ field: `${field}.above`, message: `must be a whole number of instances, 0 or more (got ${got(t.above)}). E.g. ${set("above", "0")} fires when the first instance arrives.` });
  if (t.below !== undefined && !(Number.isSafeInteger(t.below) && (t.below as number) >= 1))
    p.push({ field: `${field}.below`, message: `must be a whole number of instances, 1 or more (got ${got(t.below)}): a count never falls below 0. E.g. ${set("below", "1")} fires when the last instance leaves.` });
  return p;
}
