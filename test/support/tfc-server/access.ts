import type { Context, MiddlewareHandler } from "hono";
import { ApiError, type Env, notFound, type ServerContext } from "./jsonapi.ts";
import type { Organization, Permission, Workspace } from "./store.ts";

/** One request as the server saw it (tests assert on retries, content types, where the token went). */
export interface RecordedRequest {
  method: string;
  path: string;
  status: number;
  contentType: string | undefined;
  /** Whether an Authorization header came with it (archivist URLs must never get the token). */
  authorized: boolean;
}

/** Records every request and its answer's status. */
export function recordRequests(log: RecordedRequest[]): MiddlewareHandler<Env> {
  return async (c, next) => {
    await next();
    log.push({ method: c.req.method, path: c.req.path, status: c.res.status, contentType: c.req.header("content-type"), authorized: c.req.header("authorization") !== undefined });
  };
}

/** Answers the routes listed in `faults.failRoutes` with their error status. */
export function failingRoutes(ctx: ServerContext): MiddlewareHandler<Env> {
  return async (c, next) => {
    const route = ctx.faults.failRoutes?.find((r) => (!r.method || r.method === c.req.method) && r.path.test(c.req.path) && (r.times === undefined || r.times > 0));
    if (!route) return next();
    if (route.times !== undefined) route.times--;
    if (route.html) return c.html(`<html><body><h1>${route.status} Bad Gateway</h1></body></html>`, route.status as 500);
    throw new ApiError(route.status, "internal server error", `injected failure of ${c.req.method} ${c.req.path}`);
  };
}

/** 429 for the next requests `faults.rateLimitNext` names, and the fixed-window limit of `variants.rateLimit`. */
export function rateLimiting(ctx: ServerContext): MiddlewareHandler<Env> {
  const windows = new Map<string, { start: number; count: number }>();
  return async (c, next) => {
    const injected = ctx.faults.rateLimitNext;
    if (injected && injected.count > 0) {
      injected.count--;
      c.header("X-RateLimit-Limit", "30");
      c.header("X-RateLimit-Reset", injected.resetSeconds.toFixed(3));
      throw new ApiError(429, "too many requests", "You have exceeded the API's rate limit.");
    }
    const limit = ctx.variants.rateLimit;
    if (!limit) return next();
    const key = c.req.header("authorization") ?? "anonymous";
    const now = Date.now();
    let w = windows.get(key);
    if (!w || now - w.start >= limit.windowMs) windows.set(key, (w = { start: now, count: 0 }));
    w.count++;
    const reset = ((w.start + limit.windowMs - now) / 1000).toFixed(3);
    c.header("X-RateLimit-Limit", String(limit.limit));
    c.header("X-RateLimit-Reset", reset);
    if (w.count > limit.limit) throw new ApiError(429, "too many requests", "You have exceeded the API's rate limit.");
    return next();
  };
}

/** Bearer-token authentication: 401 without a known token. */
export function authenticate(ctx: ServerContext): MiddlewareHandler<Env> {
  return async (c, next) => {
    const m = /^Bearer (.+)$/.exec(c.req.header("authorization") ?? "");
    c.set("token", m?.[1]);
    const grant = m ? ctx.store.tokens.get(m[1]!) : undefined;
    if (!grant) throw new ApiError(401, "unauthorized");
    c.set("grant", grant);
    return next();
  };
}

/** What a request needs: reads need "read", everything else "write". */
function needed(c: Context<Env>): Permission {
  return c.req.method === "GET" ? "read" : "write";
}

/** The organization, if the token sees it (404 otherwise) and may do this request (403 otherwise). */
export function organizationFor(c: Context<Env>, ctx: ServerContext, name: string): Organization {
  const org = ctx.store.organizations.get(name);
  const permission = c.get("grant")?.organizations[name];
  if (!org || !permission) throw notFound();
  if (needed(c) === "write" && permission !== "write") throw new ApiError(403, "forbidden", `the token may not change anything in organization '${name}'`);
  return org;
}

/** The workspace by id, checked as `organizationFor` checks its organization. */
export function workspaceFor(c: Context<Env>, ctx: ServerContext, id: string): Workspace {
  const ws = ctx.store.workspaces.get(id);
  if (!ws) throw notFound();
  organizationFor(c, ctx, ws.organization);
  return ws;
}
