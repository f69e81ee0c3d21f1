import { createHash } from "node:crypto";

/**
 * Rendezvous (highest-random-weight) hashing: every member scores every task and the highest
 * score owns it. Every member computes the same answer from the same member list, and a join or
 * leave moves only the tasks whose top score changed hands (≈ 1/N of them).
 */

/** The weight of one (task, member) pair: the first 8 bytes of SHA-256 as an unsigned integer. */
export function weight(task: string, member: string): bigint {
  // A separator no id may contain keeps ("ab","c") and ("a","bc") apart.
  return createHash("sha256").update(`${task}\u0000${member}`).digest().readBigUInt64BE(0);
}

/** The member that owns `task` among `members` (undefined when there is none). Ties go to the smaller id. */
export function ownerOf(task: string, members: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestWeight = -1n;
  for (const m of members) {
    const w = weight(task, m);
    if (w > bestWeight || (w === bestWeight && best !== undefined && m < best)) {
      best = m;
      bestWeight = w;
    }
  }
  return best;
}

/**
 * Owners of every task: a pin to a member in `members` wins; otherwise rendezvous hashing.
 * A pin to a member that is not healthy is ignored (the task must still run somewhere).
 * `groupOf` names the group a task runs in (task chains: a chain's tasks run on one member): a
 * group's tasks share one owner, hashed by the group's name, or the pin of its first pinned task.
 */
export function assign(tasks: readonly string[], members: readonly string[], pins: ReadonlyMap<string, string> = new Map(), groupOf: (task: string) => string = (t) => t): Map<string, string> {
  const out = new Map<string, string>();
  const healthy = new Set(members);
  const groupPins = new Map<string, string>();
  for (const t of tasks) {
    const pin = pins.get(t);
    if (pin !== undefined && healthy.has(pin) && !groupPins.has(groupOf(t))) groupPins.set(groupOf(t), pin);
  }
  for (const t of tasks) {
    const group = groupOf(t);
    const owner = groupPins.get(group) ?? ownerOf(group, members);
    if (owner !== undefined) out.set(t, owner);
  }
  return out;
}

/** Tasks per member, for the status and the benchmark. */
export function loadOf(assignment: ReadonlyMap<string, string>, members: readonly string[]): Map<string, number> {
  const load = new Map(members.map((m) => [m, 0]));
  for (const owner of assignment.values()) load.set(owner, (load.get(owner) ?? 0) + 1);
  return load;
}

/** How many tasks changed owner between two assignments. */
export function moved(before: ReadonlyMap<string, string>, after: ReadonlyMap<string, string>): number {
  let n = 0;
  for (const [t, o] of after) if (before.get(t) !== o) n++;
  return n;
}

/**
 * `assign` that remembers its last answer: every blocking-query wake-up reconciles, and most of
 * them (a lock taken, an event stored) change neither the tasks, the members nor the pins.
 */
export function memoizedAssign(): typeof assign {
  let lastKey = "";
  let last = new Map<string, string>();
  return (tasks, members, pins = new Map(), groupOf = (t) => t) => {
    const key = `${tasks.map((t) => `${t}>${groupOf(t)}`).join("\u0000")}\u0001${members.join("\u0000")}\u0001${[...pins].map(([t, m]) => `${t}=${m}`).join("\u0000")}`;
    if (key !== lastKey) {
      last = assign(tasks, members, pins, groupOf);
      lastKey = key;
    }
    return last;
  };
}
