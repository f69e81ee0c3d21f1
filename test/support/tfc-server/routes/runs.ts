import type { Context, Hono } from "hono";
import { workspaceFor } from "../access.ts";
import { ApiError, costEstimateResource, document, type Env, notFound, paginate, phaseResource, policyCheckResource, requestData, runResource, type ServerContext } from "../jsonapi.ts";
import type { Run } from "../store.ts";
import type { RunQueue } from "../executor/run-queue.ts";

/** Runs: create, read (with include=plan,apply), list a workspace's, and the apply/discard/cancel actions. */
export function runRoutes(app: Hono<Env>, ctx: ServerContext, queue: RunQueue): void {
  const { store } = ctx;

  app.post("/api/v2/runs", async (c) => {
    const { attributes: a, relationships: r } = await requestData(c);
    const wsId = r.workspace?.data?.id;
    if (!wsId) throw new ApiError(422, "invalid attribute", "Workspace is required", "/data/relationships/workspace");
    const ws = workspaceFor(c, ctx, String(wsId));
    if (ws.executionMode === "local") throw new ApiError(422, "invalid attribute", "Runs cannot be created on a workspace in local execution mode", "/data/relationships/workspace");
    const cvId = r["configuration-version"]?.data?.id ?? ws.currentConfigurationVersionId;
    const cv = cvId ? store.configurationVersions.get(String(cvId)) : undefined;
    if (!cv || store.organizationOf(cv.workspaceId) !== ws.organization) throw new ApiError(422, "invalid attribute", "Configuration version is missing or not found", "/data/relationships/configuration-version");
    if (cv.status === "errored") throw new ApiError(422, "invalid attribute", "Configuration version errored during upload and cannot be used", "/data/relationships/configuration-version");
    if (cv.status === "pending" && !ctx.variants.pendingConfigAcceptedThenErrors) {
      throw new ApiError(422, "invalid attribute", "Configuration version is still pending; wait until it is uploaded", "/data/relationships/configuration-version");
    }
    const variables = Array.isArray(a.variables) ? a.variables.map((v: any) => ({ key: String(v?.key ?? ""), value: String(v?.value ?? "") })) : [];
    const run = queue.create({
      workspaceId: ws.id,
      configurationVersionId: cv.id,
      message: typeof a.message === "string" ? a.message : "Queued manually via the Terraform Enterprise API",
      isDestroy: a["is-destroy"] === true,
      autoApply: typeof a["auto-apply"] === "boolean" ? a["auto-apply"] : ws.autoApply,
      planOnly: a["plan-only"] === true || cv.speculative,
      variables,
      createdBy: c.get("grant")!.userId,
    });
    return document(c, { data: runResource(run, ctx) }, 201);
  });

  const find = (c: Context<Env>): Run => {
    const run = store.runs.get(c.req.param("id")!);
    if (!run) throw notFound();
    workspaceFor(c, ctx, run.workspaceId);
    return run;
  };

  app.get("/api/v2/runs/:id", (c) => {
    const run = find(c);
    const body: Record<string, unknown> = { data: runResource(run, ctx) };
    const include = (c.req.query("include") ?? "").split(",");
    if (!ctx.variants.ignoresInclude && (include.includes("plan") || include.includes("apply"))) {
      body.included = [
        ...(include.includes("plan") ? [phaseResource(run.plan, "plans", ctx)] : []),
        ...(include.includes("apply") ? [phaseResource(run.apply, "applies", ctx)] : []),
      ];
    }
    return document(c, body);
  });

  app.get("/api/v2/workspaces/:id/runs", (c) => {
    const ws = workspaceFor(c, ctx, c.req.param("id"));
    // Speculative plans are not listed in a workspace's runs (CTS issue #700 relies on that).
    const runs = [...store.runs.values()].filter((r) => r.workspaceId === ws.id && !r.planOnly).reverse();
    const page = paginate(c, runs);
    return document(c, { ...page, data: page.data.map((r) => runResource(r, ctx)) });
  });

  // Policy checks and cost estimates: read through their run (a run without them lists none, or 404).
  app.get("/api/v2/runs/:id/policy-checks", (c) => {
    const run = find(c);
    const page = paginate(c, run.policyCheck ? [run.policyCheck] : []);
    return document(c, { ...page, data: page.data.map(policyCheckResource) });
  });

  const byPart = (c: Context<Env>, match: (r: Run) => boolean): Run => {
    const run = [...store.runs.values()].find(match);
    if (!run) throw notFound();
    workspaceFor(c, ctx, run.workspaceId);
    return run;
  };

  app.get("/api/v2/policy-checks/:id", (c) => {
    const run = byPart(c, (r) => r.policyCheck?.id === c.req.param("id"));
    return document(c, { data: policyCheckResource(run.policyCheck!) });
  });

  app.get("/api/v2/cost-estimates/:id", (c) => {
    const run = byPart(c, (r) => r.costEstimate?.id === c.req.param("id"));
    return document(c, { data: costEstimateResource(run.costEstimate!) });
  });

  app.post("/api/v2/runs/:id/actions/:action", (c) => {
    const run = find(c);
    const action = c.req.param("action");
    if (action === "apply") queue.confirm(run);
    else if (action === "discard") queue.discard(run);
    else if (action === "cancel" || action === "force-cancel") queue.cancel(run, action === "force-cancel");
    else throw notFound();
    return c.body(null, 202);
  });
}
