import type { Hono } from "hono";
import { organizationFor } from "../access.ts";
import { agentPoolResource, document, type Env, organizationResource, paginate, type ServerContext } from "../jsonapi.ts";

/** GET /organizations/{org} and its agent pools. */
export function organizationRoutes(app: Hono<Env>, ctx: ServerContext): void {
  app.get("/api/v2/organizations/:org", (c) => document(c, { data: organizationResource(organizationFor(c, ctx, c.req.param("org"))) }));

  app.get("/api/v2/organizations/:org/agent-pools", (c) => {
    const org = organizationFor(c, ctx, c.req.param("org"));
    const pools = [...ctx.store.agentPools.values()].filter((p) => p.organization === org.name).map(agentPoolResource);
    return document(c, paginate(c, pools));
  });
}
