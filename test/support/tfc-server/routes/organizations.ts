import type { Hono } from "hono";
import { organizationFor } from "../access.ts";
import { agentPoolResource, document, type Env, organizationResource, paginate, type ServerContext } from "../jsonapi.ts";

/** What a paid organization may do (the attributes of GET /organizations/{org}/entitlement-set). */
const ENTITLEMENTS = { agents: true, "audit-logging": false, "cost-estimation": true, operations: true, "private-module-registry": true, sentinel: true, sso: false, "state-storage": true, teams: true, "vcs-integrations": true };

/** GET /organizations/{org}, its entitlement set and its agent pools. */
export function organizationRoutes(app: Hono<Env>, ctx: ServerContext): void {
  app.get("/api/v2/organizations/:org", (c) => document(c, { data: organizationResource(organizationFor(c, ctx, c.req.param("org"))) }));

  app.get("/api/v2/organizations/:org/entitlement-set", (c) => {
    const org = organizationFor(c, ctx, c.req.param("org"));
    return document(c, { data: { id: `org-${org.name}`, type: "entitlement-sets", attributes: { ...ENTITLEMENTS, ...ctx.store.entitlements.get(org.name), "user-limit": null } } });
  });

  app.get("/api/v2/organizations/:org/agent-pools", (c) => {
    const org = organizationFor(c, ctx, c.req.param("org"));
    const pools = [...ctx.store.agentPools.values()].filter((p) => p.organization === org.name).map(agentPoolResource);
    return document(c, paginate(c, pools));
  });
}
