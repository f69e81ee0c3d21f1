import { timingSafeEqual } from "node:crypto";
import type { MiddlewareHandler } from "hono";
import { readFileSync } from "node:fs";
import { CtsError } from "../errors/cts-error.ts";
import { CHANGING_METHODS } from "./browser-guard.ts";
import type { ApiEnv } from "./env.ts";
import { ApiError } from "./http-error.ts";

/** The API's bearer token from `api.token`, `api.tokenFile` or CTS_HTTP_TOKEN (server side), if any. */
export function apiToken(cfg: { token?: string; tokenFile?: string } | undefined, env: NodeJS.ProcessEnv = process.env): string | undefined {
  if (cfg?.token) return cfg.token;
  if (cfg?.tokenFile) {
    try {
      const t = readFileSync(cfg.tokenFile, "utf8").trim();
      if (t) return t;
    } catch (cause) {
      throw new CtsError("API_TOKEN_FILE", "usage", `cannot read api.tokenFile '${cfg.tokenFile}': ${(cause as Error).message}. Fix the path.`, { cause });
    }
    throw new CtsError("API_TOKEN_FILE", "usage", `api.tokenFile '${cfg.tokenFile}' is empty. Write the token into it.`);
  }
  return env.CTS_HTTP_TOKEN || undefined;
}

/**
 * Refuses a mutating request without the right `Authorization: Bearer <token>` (401 when missing,
 * 403 when wrong). Reads stay open, as in CTS, so health checks and dashboards need no secret.
 */
export function checkBearer(method: string, header: string | undefined, token: string | undefined, always = false): void {
  if (!token || (!always && !CHANGING_METHODS.has(method))) return;
  const m = typeof header === "string" ? /^Bearer\s+(.+)$/i.exec(header.trim()) : null;
  if (!m)
    throw new ApiError(401, `${always ? "this route is configured to need" : "this route changes tasks and needs"} a bearer token: send \`Authorization: Bearer <token>\` (cts CLI: --token or CTS_HTTP_TOKEN)`, {
      "www-authenticate": 'Bearer realm="cts"',
    });
  const given = Buffer.from(m[1]!);
  const want = Buffer.from(token);
  if (given.length !== want.length || !timingSafeEqual(given, want)) throw new ApiError(403, "the bearer token is not valid for this cts");
}

/** The bearer token check as middleware; `always` makes reads need it too (`GET /metrics` with `api.metricsRequireToken`). */
export function bearerAuth(token: string | undefined, always = false): MiddlewareHandler<ApiEnv> {
  return async (c, next) => {
    checkBearer(c.req.method, c.req.header("authorization"), token, always);
    await next();
  };
}
