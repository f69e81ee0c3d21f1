import { systemClock, type Clock } from "../time/clock.ts";
import { CtsError } from "../errors/cts-error.ts";
import { pause } from "../time/pause.ts";
import { PollPacer } from "./poll-pacer.ts";
import { cancelledError } from "./errors.ts";
import { included, many, nextPage, one, toCostEstimate, toPolicyCheck, toRun } from "./jsonapi.ts";
import type { Transport } from "./transport.ts";
import { FINAL_RUN_STATUSES, type CostEstimate, type PolicyCheck, type Run, type RunInput } from "./types.ts";
import { enc } from "./workspaces.ts";

/** The first wait of a run's poll, after it is created and after each status change (doubling up to the interval). */
export const FIRST_POLL_MS = 100;

/** How to follow a run. */
export interface FollowOptions {
  signal?: AbortSignal;
  /** The longest wait between reads (default 1 s): the poll backs off to it. */
  intervalMs?: number;
  /** The wait after the first read and after each status change (default 100 ms); it doubles up to `intervalMs`. */
  firstIntervalMs?: number;
  /** Give up after this long: TFC_RUN_TIMEOUT naming the run and its status. Unset: no limit. */
  limitMs?: number;
  /** Called with each status the run is seen in. */
  onStatus?: (run: Run) => void;
}

/** True when the run will not change again by itself. */
export function isFinal(run: Run): boolean {
  return FINAL_RUN_STATUSES.has(run.status);
}

/**
 * True when the run waits for a person: planned and confirmable without auto-apply (a run with
 * auto-apply moves on by itself), or stopped by a soft-failed policy that needs an override.
 */
export function awaitsPerson(run: Run): boolean {
  if (run.status === "policy_soft_failed" || run.status === "policy_override") return true;
  return ["planned", "cost_estimated", "policy_checked"].includes(run.status) && run.actions.isConfirmable && !run.autoApply;
}

/** Runs: create, read, the apply/discard/cancel actions, and following one to its end. */
export class Runs {
  constructor(
    private readonly t: Transport,
    /** Poll waits and the follow limit run on it (tests pass a fake clock). */
    private readonly clock: Clock = systemClock,
    /** Spaces the polls of all runs this client follows (Terraform Cloud's rate limit). */
    private readonly pacer: PollPacer = new PollPacer(undefined, clock),
  ) {}

  /** Creates a run on a workspace and configuration version. */
  async create(input: RunInput, signal?: AbortSignal): Promise<Run> {
    const attributes: Record<string, unknown> = { "is-destroy": input.isDestroy === true, message: input.message ?? "Queued by cts", "plan-only": input.planOnly === true };
    if (input.autoApply !== undefined) attributes["auto-apply"] = input.autoApply;
    if (input.variables?.length) attributes.variables = input.variables;
    const relationships: Record<string, unknown> = { workspace: { data: { type: "workspaces", id: input.workspaceId } } };
    if (input.configurationVersionId) relationships["configuration-version"] = { data: { type: "configuration-versions", id: input.configurationVersionId } };
    const body = { data: { type: "runs", attributes, relationships } };
    return toRun(one(await this.t.json({ method: "POST", path: "/api/v2/runs", body, signal }), { method: "POST", path: "/api/v2/runs" }));
  }

  /** The newest runs of a workspace (speculative plans are not listed), first page only. */
  async listRecent(workspaceId: string, pageSize = 20, signal?: AbortSignal): Promise<Run[]> {
    const path = `/api/v2/workspaces/${enc(workspaceId)}/runs`;
    const doc = await this.t.json({ method: "GET", path, query: { "page[size]": String(pageSize), "page[number]": "1" }, signal, idempotent: true });
    return many(doc, { method: "GET", path }).map((r) => toRun(r));
  }

  /** Reads a run, asking for its plan and apply too (servers may ignore that: read them by id then). */
  async read(id: string, signal?: AbortSignal): Promise<Run> {
    const path = `/api/v2/runs/${enc(id)}`;
    const doc = await this.t.json({ method: "GET", path, query: { include: "plan,apply" }, signal, idempotent: true });
    return toRun(one(doc, { method: "GET", path }), included(doc));
  }

  /** The run's policy checks, all pages (none when the organization has no policy sets for the workspace). */
  async policyChecks(id: string, signal?: AbortSignal): Promise<PolicyCheck[]> {
    const path = `/api/v2/runs/${enc(id)}/policy-checks`;
    const out: PolicyCheck[] = [];
    for (let page: number | undefined = 1; page !== undefined; ) {
      const doc = await this.t.json({ method: "GET", path, query: { "page[number]": String(page), "page[size]": "100" }, signal, idempotent: true });
      out.push(...many(doc, { method: "GET", path }).map(toPolicyCheck));
      page = nextPage(doc);
    }
    return out;
  }

  /** A cost estimate, by the id of the run's `cost-estimate` relationship. */
  async costEstimate(id: string, signal?: AbortSignal): Promise<CostEstimate> {
    const path = `/api/v2/cost-estimates/${enc(id)}`;
    return toCostEstimate(one(await this.t.json({ method: "GET", path, signal, idempotent: true }), { method: "GET", path }));
  }

  /** Confirms a run waiting for it (TFC_CONFLICT otherwise). */
  async apply(id: string, comment = "Applied by cts", signal?: AbortSignal): Promise<void> {
    await this.t.call({ method: "POST", path: `/api/v2/runs/${enc(id)}/actions/apply`, body: { comment }, signal });
  }

  /** Discards a run waiting for confirmation (TFC_CONFLICT otherwise). */
  async discard(id: string, comment = "Discarded by cts", signal?: AbortSignal): Promise<void> {
    await this.t.call({ method: "POST", path: `/api/v2/runs/${enc(id)}/actions/discard`, body: { comment }, signal });
  }

  /** Cancels a planning, applying or queued run (TFC_CONFLICT otherwise). */
  async cancel(id: string, comment = "Canceled by cts", signal?: AbortSignal): Promise<void> {
    await this.t.call({ method: "POST", path: `/api/v2/runs/${enc(id)}/actions/cancel`, body: { comment }, signal });
  }

  /**
   * Reads the run until it is final or waits for a person; the limit gives TFC_RUN_TIMEOUT. The
   * poll is adaptive: soon after the run is created and after each status change (100 ms), doubling
   * toward `intervalMs` while nothing moves, so a run that ends is seen within a few hundred ms of
   * its last step without polling a long run often. Every read goes through the client's retries
   * (429 waits as the server asks) and the client's pacer (all polls in all stay under the rate limit).
   */
  async follow(id: string, opts: FollowOptions = {}): Promise<Run> {
    const cap = Math.max(1, opts.intervalMs ?? 1000);
    const first = Math.min(cap, Math.max(1, opts.firstIntervalMs ?? FIRST_POLL_MS));
    const started = this.clock.now();
    const stopped = () => cancelledError({ method: "GET", path: `/api/v2/runs/${id}` });
    let last = "";
    let wait = first;
    for (;;) {
      if (!(await this.pacer.turn(opts.signal))) throw stopped();
      const run = await this.read(id, opts.signal);
      if (run.status !== last) {
        opts.onStatus?.(run);
        wait = first;
      }
      last = run.status;
      if (isFinal(run) || awaitsPerson(run)) return run;
      const left = opts.limitMs === undefined ? Number.POSITIVE_INFINITY : started + opts.limitMs - this.clock.now();
      if (left <= 0) {
        throw new CtsError("TFC_RUN_TIMEOUT", "external", `Run ${id} is still '${run.status}' after ${opts.limitMs} ms; cts stopped following it (the run goes on in Terraform Cloud).`, {
          detail: { run: id, status: run.status },
        });
      }
      if (!(await pause(Math.min(wait, left), opts.signal, this.clock))) throw stopped();
      wait = Math.min(cap, wait * 2);
    }
  }
}
