import type { Hono } from "hono";
import { document, type Env } from "../jsonapi.ts";

/** GET /account/details: the token's account (every token here belongs to a user). */
export function accountRoutes(app: Hono<Env>): void {
  app.get("/api/v2/account/details", (c) => {
    const grant = c.get("grant")!;
    return document(c, { data: { id: grant.userId, type: "users", attributes: { username: grant.username, "is-service-account": grant.username.startsWith("api-team_"), "two-factor": { enabled: false, verified: false } } } });
  });
}
