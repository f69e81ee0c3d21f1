import type { Hono } from "hono";
import { workspaceFor } from "../access.ts";
import { configurationVersionResource, document, type Env, notFound, requestData, type ServerContext } from "../jsonapi.ts";
import type { ConfigurationVersion } from "../store.ts";
import type { RunQueue } from "../executor/run-queue.ts";

/** Configuration versions: create (with an upload URL) and read (pending → uploaded). */
export function configurationVersionRoutes(app: Hono<Env>, ctx: ServerContext, queue: RunQueue): void {
  const { store } = ctx;

  app.post("/api/v2/workspaces/:id/configuration-versions", async (c) => {
    const ws = workspaceFor(c, ctx, c.req.param("id"));
    const { attributes: a } = await requestData(c);
    const cv = store.addConfigurationVersion(ws.id, {
      autoQueueRuns: a["auto-queue-runs"] !== false,
      speculative: a.speculative === true,
      pendingReads: ctx.variants.uploadPendingReads ?? 0,
    });
    return document(c, { data: configurationVersionResource(cv, ctx) }, 201);
  });

  app.get("/api/v2/configuration-versions/:id", (c) => {
    const cv = store.configurationVersions.get(c.req.param("id"));
    if (!cv) throw notFound();
    workspaceFor(c, ctx, cv.workspaceId);
    if (cv.status === "pending" && cv.tarball) {
      if (cv.pendingReadsLeft > 0) cv.pendingReadsLeft--;
      else markUploaded(cv, ctx, queue);
    }
    return document(c, { data: configurationVersionResource(cv, ctx) });
  });
}

/**
 * The upload is processed: the version can be used by runs, becomes the workspace's current one,
 * and queues a run when `auto-queue-runs` asks for it (unless the server ignores that flag).
 */
export function markUploaded(cv: ConfigurationVersion, ctx: ServerContext, queue: RunQueue): void {
  cv.status = "uploaded";
  const ws = ctx.store.workspaces.get(cv.workspaceId);
  if (!ws) return;
  if (!cv.speculative) ws.currentConfigurationVersionId = cv.id;
  if (cv.autoQueueRuns && !ctx.variants.ignoresAutoQueueRuns) {
    queue.create({ workspaceId: ws.id, configurationVersionId: cv.id, message: "Triggered via API", isDestroy: false, autoApply: ws.autoApply, planOnly: cv.speculative, variables: [], createdBy: "" });
  }
}
