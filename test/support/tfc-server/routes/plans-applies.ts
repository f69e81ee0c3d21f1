import type { Context, Hono } from "hono";
import { workspaceFor } from "../access.ts";
import { document, type Env, notFound, phaseResource, type ServerContext } from "../jsonapi.ts";
import type { Phase } from "../store.ts";

/** Plans and applies, read by id or through their run, and a plan's JSON (a redirect to the archivist). */
export function planApplyRoutes(app: Hono<Env>, ctx: ServerContext): void {
  const { store } = ctx;

  const phase = (c: Context<Env>, kind: "plan" | "apply"): Phase => {
    const id = c.req.param("id")!;
    const run = id.startsWith("run-") ? store.runs.get(id) : store.runs.get(store.phases.get(id)?.runId ?? "");
    const found = run?.[kind];
    if (!run || !found || (!id.startsWith("run-") && found.id !== id)) throw notFound();
    workspaceFor(c, ctx, run.workspaceId);
    return found;
  };

  for (const [path, kind] of [
    ["/api/v2/plans/:id", "plan"],
    ["/api/v2/runs/:id/plan", "plan"],
    ["/api/v2/applies/:id", "apply"],
    ["/api/v2/runs/:id/apply", "apply"],
  ] as const) {
    app.get(path, (c) => document(c, { data: phaseResource(phase(c, kind), kind === "plan" ? "plans" : "applies", ctx) }));
  }

  for (const path of ["/api/v2/plans/:id/json-output", "/api/v2/runs/:id/plan/json-output"]) {
    app.get(path, (c) => {
      const plan = phase(c, "plan");
      if (!plan.jsonSecret) return c.body(null, 204);
      return c.redirect(`${ctx.baseUrl()}/_archivist/blob/${plan.jsonSecret}`, 307);
    });
  }
}
