import type { Problem } from "../errors/problems.ts";

// Task chains (CTS #329): a task lists the tasks it runs after (`after`), and reads their
// Terraform outputs as input (`input.outputs.<task>`). These are the checks and the order,
// without the runtime: names a task lists must exist, no chain may run in a circle, and every
// upstream task comes before its downstream ones.

/** A task name (validate.ts's TASK_NAME, CTS's rule). */
const NAME = /^[A-Za-z_][A-Za-z0-9_-]{0,127}$/;

/** What the chain checks read of a task. */
export interface ChainNode {
  name: string;
  after?: readonly string[] | undefined;
}

/** The problems of one task's `after` value on its own (the type, each name, itself). */
export function afterProblems(name: string, after: unknown, at = "after"): Problem[] {
  if (after === undefined) return [];
  if (!Array.isArray(after)) return [{ field: at, message: `must be a list of task names, e.g. after: ["upstream-task"] (got ${JSON.stringify(after) ?? String(after)}).` }];
  const p: Problem[] = [];
  const seen = new Set<string>();
  after.forEach((n, i) => {
    if (typeof n !== "string" || !NAME.test(n)) p.push({ field: `${at}[${i}]`, message: `must be a task name (got ${JSON.stringify(n) ?? String(n)}).` });
    else if (n === name) p.push({ field: `${at}[${i}]`, message: `names the task itself ('${name}'): a task cannot run after itself. Remove it.` });
    else if (seen.has(n)) p.push({ field: `${at}[${i}]`, message: `names '${n}' twice. Remove one.` });
    seen.add(String(n));
  });
  return p;
}

/**
 * The problems of the tasks' chains together: a name in `after` that is no task, and a circle
 * (named by its path, `a → b → a`). Each problem names the task whose `after` is wrong. `among`
 * says what the tasks are, for the message: a config's ("config", when it loads) or a running
 * daemon's ("daemon": config tasks and tasks created through the API).
 */
export function chainProblems(tasks: ReadonlyArray<ChainNode>, among: "config" | "daemon" = "config"): Array<Problem & { task: string }> {
  const byName = new Map(tasks.map((t, i) => [t.name, i]));
  const p: Array<Problem & { task: string }> = [];
  const unknown =
    among === "config"
      ? (n: string) => `names task '${n}', which is not in the config.${closest(n, [...byName.keys()])} A task runs after tasks of the same config.`
      : (n: string) => `names task '${n}', which does not exist.${closest(n, [...byName.keys()])} A task runs after tasks the daemon has (its config's or created through the API): create that task first, or fix the name.`;
  tasks.forEach((t) => {
    (t.after ?? []).forEach((n, j) => {
      if (!byName.has(n)) p.push({ task: t.name, field: `after[${j}]`, message: unknown(n) });
    });
  });
  const cycle = findCycle(tasks);
  if (cycle) {
    p.push({ task: cycle[0]!, field: "after", message: `makes a circle of tasks: ${cycle.join(" → ")}. A chain must end: remove one of these names from an \`after\`.` });
  }
  return p;
}

/** One circle of `after` links, as the path that closes it (`["a", "b", "a"]`: a runs after b, b after a), or undefined. */
export function findCycle(tasks: ReadonlyArray<ChainNode>): string[] | undefined {
  const after = new Map(tasks.map((t) => [t.name, t.after ?? []]));
  const state = new Map<string, "open" | "done">();
  const path: string[] = [];
  const visit = (name: string): string[] | undefined => {
    const s = state.get(name);
    if (s === "done") return undefined;
    if (s === "open") return [...path.slice(path.indexOf(name)), name];
    state.set(name, "open");
    path.push(name);
    for (const up of after.get(name) ?? []) {
      if (!after.has(up)) continue;
      const found = visit(up);
      if (found) return found;
    }
    path.pop();
    state.set(name, "done");
    return undefined;
  };
  for (const t of tasks) {
    const found = visit(t.name);
    if (found) return found.reverse();
  }
  return undefined;
}

/** The tasks in chain order: each after the tasks it lists, otherwise in the order given (stable). A circle keeps the given order for its tasks. */
export function chainOrder<T extends ChainNode>(tasks: ReadonlyArray<T>): T[] {
  const names = new Set(tasks.map((t) => t.name));
  const placed = new Set<string>();
  const out: T[] = [];
  let left = [...tasks];
  while (left.length) {
    const ready = left.filter((t) => (t.after ?? []).every((u) => placed.has(u) || !names.has(u)));
    const take = ready.length ? ready : [left[0]!];
    for (const t of take) {
      placed.add(t.name);
      out.push(t);
    }
    left = left.filter((t) => !placed.has(t.name));
  }
  return out;
}

/** The tasks that list `name` in their `after` (its direct downstream tasks). */
export function downstreamOf(name: string, tasks: Iterable<ChainNode>): string[] {
  const out: string[] = [];
  for (const t of tasks) if (t.after?.includes(name)) out.push(t.name);
  return out;
}

/** Every task downstream of `name`, near ones first (its downstream tasks, theirs, …). */
export function allDownstreamOf(name: string, tasks: ReadonlyArray<ChainNode>): string[] {
  const out: string[] = [];
  const queue = [name];
  while (queue.length) {
    for (const d of downstreamOf(queue.shift()!, tasks)) {
      if (d === name || out.includes(d)) continue;
      out.push(d);
      queue.push(d);
    }
  }
  return out;
}

/**
 * The chain a task belongs to, named by its first task in name order: tasks linked by `after`
 * (either way) share it. Shared mode assigns a chain's tasks to one member by this name.
 */
export function chainIdOf(name: string, tasks: ReadonlyArray<ChainNode>): string {
  const seen = new Set([name]);
  const queue = [name];
  while (queue.length) {
    const n = queue.shift()!;
    const t = tasks.find((x) => x.name === n);
    for (const m of [...(t?.after ?? []), ...downstreamOf(n, tasks)]) {
      if (seen.has(m) || !tasks.some((x) => x.name === m)) continue;
      seen.add(m);
      queue.push(m);
    }
  }
  return [...seen].sort()[0]!;
}

function closest(name: string, names: string[]): string {
  let best: string | undefined;
  let bestD = Infinity;
  for (const n of names) {
    const d = distance(name, n);
    if (d < bestD) [best, bestD] = [n, d];
  }
  return best !== undefined && bestD <= Math.max(2, Math.floor(name.length / 3)) ? ` Did you mean '${best}'?` : "";
}

function distance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let prev = row[0]!;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const cur = row[j]!;
      row[j] = Math.min(row[j]! + 1, row[j - 1]! + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = cur;
    }
  }
  return row[b.length]!;
}
