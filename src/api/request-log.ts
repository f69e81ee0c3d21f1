import type { MiddlewareHandler } from "hono";
import type { Logger } from "../log/logger.ts";
import type { ApiEnv } from "./env.ts";

/** One debug line per request: method, path as sent, status and time taken. */
export function requestLog(log: Logger): MiddlewareHandler<ApiEnv> {
  return async (c, next) => {
    const started = Date.now();
    await next();
    const path = (c.env?.incoming?.url ?? c.req.path).split("?")[0]!.slice(0, 200);
    log.debug(`${c.req.method} ${path} ${c.res.status}`, { request_id: c.get("requestId"), ms: Date.now() - started });
  };
}
