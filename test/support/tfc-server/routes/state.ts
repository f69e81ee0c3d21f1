import type { Hono } from "hono";
import { workspaceFor } from "../access.ts";
import { document, type Env, notFound, type ServerContext, stateOutputs, stateVersionResource } from "../jsonapi.ts";

/** A workspace's current state version and its outputs. */
export function stateRoutes(app: Hono<Env>, ctx: ServerContext): void {
  app.get("/api/v2/workspaces/:id/current-state-version", (c) => {
    const current = workspaceFor(c, ctx, c.req.param("id")).stateVersions.at(-1);
    if (!current) throw notFound();
    return document(c, { data: stateVersionResource(current) });
  });

  app.get("/api/v2/workspaces/:id/current-state-version-outputs", (c) => {
    const current = workspaceFor(c, ctx, c.req.param("id")).stateVersions.at(-1);
    return document(c, { data: current ? stateOutputs(current) : [] });
  });
}
