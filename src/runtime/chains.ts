import { allDownstreamOf, downstreamOf, type ChainNode } from "../task/chains.ts";
import type { AnyTaskInput, UpstreamOutputs } from "../task/task.ts";
import type { OutputsRecord } from "../state/records.ts";
import type { RunOutcome } from "./interfaces.ts";

// Task chains (CTS #329) at run time. A task that lists others in `after` runs after them: while
// one of them has a run wanted or in progress, its own run waits; when one applies, it runs next
// with the new outputs; when one fails or is held, its run is skipped (and so are the runs of the
// tasks after it), until that upstream task runs well again. The order and the checks at load are
// src/task/chains.ts; the queue is runs.ts, which asks this class before and after each apply run.

/** What a chain says of a run about to start. */
export type ChainVerdict = { wait: string } | { skip: string; upstream: string } | undefined;

/** What to do after an upstream task's run ended: tasks to run next, tasks whose runs are skipped (and why). */
export interface ChainFollowUp {
  run: string[];
  skip: Array<{ task: string; why: string; upstream: string }>;
  /** The task that just ran was given the chain's data while its own had changed since: it runs again with the newer data. */
  again?: true;
}

/**
 * The data a chain runs on: each of its tasks' input as cts held it when the first run of the
 * chain read its own, with the change keys of the watched ones (to tell when newer data came).
 */
export interface ChainSnapshot {
  inputs: ReadonlyMap<string, AnyTaskInput>;
  versions: ReadonlyMap<string, readonly string[] | undefined>;
}

/**
 * The chain state of one instance's runs: which upstream tasks are broken (their last run failed,
 * was held or skipped), which downstream runs wait, which were skipped. Kept in memory: after a
 * restart or a failover every task runs once, upstream tasks first.
 */
export class ChainRuns {
  /** Upstream tasks whose last apply run did not succeed, with what happened ("failed", "is held for approval"…). */
  private readonly broken = new Map<string, string>();
  /** Downstream tasks whose run waits for an upstream run. */
  private readonly waiting = new Set<string>();
  /** Tasks whose run was skipped because an upstream task broke: they run when it recovers. */
  private readonly skipped = new Set<string>();
  /** Tasks with an apply run in progress. */
  private readonly applying = new Set<string>();
  /** Per task whose run read its input: the chain's data its downstream runs get. */
  private readonly taken = new Map<string, ChainSnapshot>();
  /** Per downstream task: the chain's data its next run reads (set when its upstream run ends). */
  private readonly pinned = new Map<string, ChainSnapshot>();
  /** Tasks whose run was given the chain's data while their own had changed since. */
  private readonly stale = new Set<string>();

  constructor(private readonly nodes: () => ChainNode[]) {}

  /** The tasks `name` runs after. */
  upstreamOf(name: string): readonly string[] {
    return this.nodes().find((n) => n.name === name)?.after ?? [];
  }

  /** Every task downstream of `name`, near ones first. */
  downstreamOf(name: string): string[] {
    return this.chained ? allDownstreamOf(name, this.nodes()) : [];
  }

  /** The chain's data the next run of `name` reads, if an upstream run left it some. */
  pinnedFor(name: string): ChainSnapshot | undefined {
    return this.pinned.get(name);
  }

  /** A run of `name` read its input: `snapshot` is what its downstream runs read (replacing any earlier read's). */
  took(name: string, snapshot: ChainSnapshot): void {
    this.taken.set(name, snapshot);
  }

  /** A run of `name` got the chain's data while its own had changed since: it runs again after. */
  newerData(name: string): void {
    this.stale.add(name);
  }

  /** Whether any task is in a chain (nothing to do otherwise). */
  private get chained(): boolean {
    return this.nodes().some((n) => n.after?.length);
  }

  /**
   * Asked before an apply run of `name`: wait (an upstream task has a run wanted or in progress;
   * `wanted` says which are queued), skip (an upstream task is broken), or run.
   */
  before(name: string, wanted: (task: string) => boolean): ChainVerdict {
    const ups = this.upstreamOf(name);
    for (const u of ups) {
      const why = this.broken.get(u);
      if (why) {
        this.pinned.delete(name);
        return { skip: `upstream task '${u}' ${why}`, upstream: u };
      }
    }
    const busy = ups.find((u) => this.applying.has(u) || wanted(u));
    if (busy) {
      this.waiting.add(name);
      return { wait: busy };
    }
    this.waiting.delete(name);
    return undefined;
  }

  /**
   * The held plan of `name` was rejected (`cts reject`): the runs its hold skips say from now on
   * that it was rejected (nothing is held any more), as they will after its next run.
   */
  rejected(name: string): void {
    const held = brokenWhy({ ok: false, outcome: "held" })!;
    if (this.broken.get(name) !== held) return;
    const why = brokenWhy({ ok: false, outcome: "rejected" })!;
    this.broken.set(name, why);
    for (const d of this.downstreamOf(name)) {
      if (this.broken.get(d) === `was skipped (upstream task '${name}' ${held})`) this.broken.set(d, `was skipped (upstream task '${name}' ${why})`);
    }
  }

  /** An apply run of `name` starts. */
  started(name: string): void {
    this.applying.add(name);
  }

  /**
   * An apply run of `name` ended with `outcome`: its downstream tasks run next when it applied (or
   * when they were skipped before and it is well again), are skipped when it failed or was held, and
   * waiting ones whose upstream tasks are all done are let go.
   */
  ended(name: string, outcome: Pick<RunOutcome, "ok" | "outcome">, wanted: (task: string) => boolean): ChainFollowUp {
    this.applying.delete(name);
    const follow: ChainFollowUp = { run: [], skip: [] };
    const snapshot = this.taken.get(name);
    this.taken.delete(name);
    this.pinned.delete(name);
    if (this.stale.delete(name)) follow.again = true;
    if (!this.chained) return follow;
    const nodes = this.nodes();
    const why = brokenWhy(outcome);
    if (why) {
      this.broken.set(name, why);
      for (const d of allDownstreamOf(name, nodes)) {
        this.waiting.delete(d);
        this.pinned.delete(d);
        this.skipped.add(d);
        this.broken.set(d, `was skipped (upstream task '${name}' ${why})`);
        follow.skip.push({ task: d, why: `upstream task '${name}' ${why}`, upstream: name });
      }
      return follow;
    }
    if (outcome.ok) {
      this.broken.delete(name);
      this.skipped.delete(name);
      for (const d of downstreamOf(name, nodes)) {
        const again = this.skipped.has(d) && this.upstreamOf(d).every((u) => !this.broken.has(u));
        if (outcome.outcome === "applied" || again) {
          this.skipped.delete(d);
          follow.run.push(d);
        }
      }
    }
    // Waiting runs whose upstream tasks are all done go now (in the queue's order).
    for (const d of [...this.waiting]) {
      if (follow.run.includes(d)) continue;
      if (this.upstreamOf(d).every((u) => !this.applying.has(u) && !wanted(u))) {
        this.waiting.delete(d);
        follow.run.push(d);
      }
    }
    // The runs that follow read the data this run read (one snapshot for the chain).
    for (const d of follow.run) {
      if (snapshot?.inputs.has(d)) this.pinned.set(d, snapshot);
      else this.pinned.delete(d);
    }
    return follow;
  }

  /** A queued run of `name` was refused or dropped (paused, elsewhere, disabled): runs waiting for it may go. */
  dropped(name: string, wanted: (task: string) => boolean): string[] {
    this.applying.delete(name);
    this.taken.delete(name);
    this.pinned.delete(name);
    this.stale.delete(name);
    const out: string[] = [];
    for (const d of [...this.waiting]) {
      if (this.upstreamOf(d).every((u) => !this.applying.has(u) && !wanted(u))) {
        this.waiting.delete(d);
        out.push(d);
      }
    }
    return out;
  }

  /** Forgets what this instance knew (paused: the next leader, or this one resumed, runs every task once). */
  reset(): void {
    this.broken.clear();
    this.waiting.clear();
    this.skipped.clear();
    this.applying.clear();
    this.taken.clear();
    this.pinned.clear();
    this.stale.clear();
  }
}

/** What an upstream run that breaks its chain did ("failed", "is held for approval", "was rejected"), or undefined. */
function brokenWhy(outcome: Pick<RunOutcome, "ok" | "outcome">): string | undefined {
  if (outcome.ok) return undefined;
  if (outcome.outcome === "failed") return "failed";
  if (outcome.outcome === "held") return "is held for approval";
  if (outcome.outcome === "rejected") return "was rejected";
  if (outcome.outcome === "skipped") return "was skipped";
  return undefined;
}

/**
 * The outputs a downstream task reads (`input.outputs`): each upstream task's latest plain outputs
 * by name, `{}` before its first apply. A sensitive output (kept redacted) and one too large to keep
 * never flow: a downstream task gets no stand-in text it could mistake for the value.
 */
export function upstreamOutputs(after: readonly string[], outputsOf: (task: string) => OutputsRecord | undefined): UpstreamOutputs {
  const out: UpstreamOutputs = {};
  for (const name of after) {
    const values: Record<string, unknown> = {};
    for (const [key, o] of Object.entries(outputsOf(name)?.outputs ?? {})) if (!o.sensitive && !o.truncated) values[key] = o.value;
    out[name] = values;
  }
  return out;
}
