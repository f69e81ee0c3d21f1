import { MAX_WALK_DEPTH, tooDeepAt } from "../values/data-depth.ts";
import { isAppliedRecord, isHoldRecord, isOutputsRecord, isRunRecord, type AppliedRecord, type HoldRecord, type OutputsRecord, type RunRecord, type StoredTask, type TaskEvent } from "./records.ts";

/** One entry of a recursive KV read (the cluster's `HaKv` answers with these). */
export interface KvEntry {
  key: string;
  value: string;
  session?: string;
  modifyIndex?: bigint;
}

/** The cluster's stored state, as read from KV. */
export interface StoredState {
  tasks: Map<string, StoredTask>;
  events: Map<string, TaskEvent[]>;
  /** Plans held for approval (and rejected inputs), by task. */
  holds: Map<string, HoldRecord>;
  /** What the leader applied last, by task (the no-op skip of a new leader). */
  applied: Map<string, AppliedRecord>;
  /** Each task's latest Terraform outputs (sensitive values redacted). */
  outputs?: Map<string, OutputsRecord>;
  /** Each task's run history, newest first. */
  runs?: Map<string, RunRecord[]>;
  /** Entries that could not be parsed (logged, ignored). */
  problems: string[];
}

/** KV keys of the stored state under `<parentPath>/state/`. */
export const stateKeys = {
  task: (prefix: string, name: string) => `${prefix}tasks/${name}`,
  events: (prefix: string, name: string) => `${prefix}events/${name}`,
  hold: (prefix: string, name: string) => `${prefix}holds/${name}`,
  applied: (prefix: string, name: string) => `${prefix}applied/${name}`,
  outputs: (prefix: string, name: string) => `${prefix}outputs/${name}`,
  /** One key per run (a task's history can outgrow one KV value): `runs/<task>/<run id>`. */
  run: (prefix: string, name: string, id: string) => `${prefix}runs/${name}/${id}`,
};

/** Parses the entries of `<parentPath>/state/` (a recursive read). */
export function parseState(prefix: string, entries: KvEntry[]): StoredState {
  const outputs = new Map<string, OutputsRecord>();
  const runs = new Map<string, RunRecord[]>();
  const state: StoredState = { tasks: new Map(), events: new Map(), holds: new Map(), applied: new Map(), outputs, runs, problems: [] };
  for (const e of entries) {
    if (!e.key.startsWith(prefix)) continue;
    const rest = e.key.slice(prefix.length);
    const slash = rest.indexOf("/");
    if (slash < 0) continue;
    const kind = rest.slice(0, slash);
    let name = rest.slice(slash + 1);
    // runs/<task>/<run id>: the task's name has no slash.
    const runAt = kind === "runs" ? name.indexOf("/") : -1;
    const id = runAt >= 0 ? name.slice(runAt + 1) : "";
    if (kind === "runs") name = runAt >= 0 ? name.slice(0, runAt) : "";
    if (!name) continue;
    try {
      const value = JSON.parse(e.value) as unknown;
      // KV is writable by anyone with the ACL: an entry nested too deep to re-encode is set aside, not restored.
      const deep = tooDeepAt(value, MAX_WALK_DEPTH);
      if (deep !== undefined) throw new Error(`nests deeper than ${MAX_WALK_DEPTH} levels (at ${deep})`);
      if (kind === "tasks") {
        const t = value as StoredTask;
        if (!t || typeof t !== "object" || t.name !== name || (t.origin !== "config" && t.origin !== "api") || typeof t.enabled !== "boolean")
          throw new Error("not a stored task");
        if (t.origin === "api" && !t.deleted && (!t.spec || typeof t.spec !== "object")) throw new Error("an API task without its spec");
        state.tasks.set(name, t);
      } else if (kind === "holds") {
        if (!isHoldRecord(value, name)) throw new Error("not a held plan of this task");
        state.holds.set(name, value);
      } else if (kind === "applied") {
        if (!isAppliedRecord(value)) throw new Error("not an applied record");
        state.applied.set(name, { ...(value.key !== undefined ? { key: value.key } : {}), ...(value.count !== undefined ? { count: value.count } : {}), ...(value.state !== undefined ? { state: value.state } : {}) });
      } else if (kind === "outputs") {
        if (!isOutputsRecord(value)) throw new Error("not a task's outputs");
        outputs.set(name, value);
      } else if (kind === "runs") {
        if (!isRunRecord(value, name) || value.id !== id) throw new Error("not a run of this task");
        const list = runs.get(name) ?? [];
        list.push(value);
        runs.set(name, list);
      } else if (kind === "events") {
        if (!Array.isArray(value)) throw new Error("not a list of events");
        state.events.set(name, (value as TaskEvent[]).filter((ev) => ev && typeof ev === "object" && ev.task_name === name));
      }
    } catch (err) {
      state.problems.push(`'${e.key}': ${err instanceof Error ? err.message : String(err)}`);
    }
  }
  // Newest first (ids sort by start time).
  for (const list of runs.values()) list.sort((a, b) => (a.id < b.id ? 1 : a.id > b.id ? -1 : 0));
  return state;
}

/** A stable text of a stored task, to tell whether a mirror must change anything. */
export function taskFingerprint(t: StoredTask | undefined): string {
  if (!t) return "";
  return JSON.stringify({ o: t.origin, e: t.enabled, d: t.deleted ?? false, s: t.spec ?? null });
}
