import { badAnswer } from "./errors.ts";
import { one, toApply, toPlan } from "./jsonapi.ts";
import { summarizePlanJson } from "./plan-summary.ts";
import { headerOf, type Transport } from "./transport.ts";
import type { Apply, Plan, PlanOutcome } from "./types.ts";
import { enc } from "./workspaces.ts";

/** Plans, applies, their logs and a plan's JSON. */
export class Plans {
  constructor(private readonly t: Transport) {}

  /** Reads a plan. */
  async read(id: string, signal?: AbortSignal): Promise<Plan> {
    const path = `/api/v2/plans/${enc(id)}`;
    return toPlan(one(await this.t.json({ method: "GET", path, signal, idempotent: true }), { method: "GET", path }));
  }

  /** Reads an apply. */
  async readApply(id: string, signal?: AbortSignal): Promise<Apply> {
    const path = `/api/v2/applies/${enc(id)}`;
    return toApply(one(await this.t.json({ method: "GET", path, signal, idempotent: true }), { method: "GET", path }));
  }

  /**
   * The plan's JSON output, or undefined while there is none (204). The API answers with a
   * redirect to a signed URL, which is followed without the token.
   */
  async json(planId: string, signal?: AbortSignal): Promise<unknown> {
    const path = `/api/v2/plans/${enc(planId)}/json-output`;
    const first = await this.t.call({ method: "GET", path, signal, idempotent: true, accept: [204, 301, 302, 303, 307, 308] });
    if (first.status === 204) return undefined;
    let body = first.body;
    if (first.status >= 300) {
      const location = headerOf(first.headers, "location");
      if (!location) throw badAnswer({ method: "GET", path }, `a ${first.status} redirect without a Location`);
      body = (await this.t.call({ method: "GET", path: new URL(location, this.t.baseUrl).href, signal, idempotent: true })).body;
    }
    try {
      return JSON.parse(body);
    } catch {
      throw badAnswer({ method: "GET", path }, "the plan's JSON output is not JSON");
    }
  }

  /** A log (plan or apply) from its log-read-url, fetched without the token. */
  async log(logReadUrl: string, signal?: AbortSignal): Promise<string> {
    return (await this.t.call({ method: "GET", path: logReadUrl, signal, idempotent: true })).body;
  }

  /**
   * Whether a plan changes anything, and the counts. Servers differ: some leave counts out or send
   * 0, some even `has-changes`; whenever the plan's own attributes cannot be trusted to tell, the
   * plan's JSON decides.
   */
  async outcome(planId: string, signal?: AbortSignal): Promise<PlanOutcome> {
    const plan = await this.read(planId, signal);
    const counts = [plan.additions, plan.changes, plan.destructions];
    if (plan.hasChanges === false) return { changesPresent: false, summary: { add: 0, change: 0, destroy: 0 } };
    const countsKnown = counts.every((n) => typeof n === "number") && counts.some((n) => n! > 0);
    if (plan.hasChanges === true && countsKnown) return { changesPresent: true, summary: { add: plan.additions!, change: plan.changes!, destroy: plan.destructions! } };
    const json = await this.json(planId, signal);
    if (json === undefined) throw badAnswer({ method: "GET", path: `/api/v2/plans/${planId}/json-output` }, "the plan has no JSON output to tell whether it changes anything");
    return summarizePlanJson(json);
  }
}
