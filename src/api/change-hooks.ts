import type { MiddlewareHandler } from "hono";
import type { ApiDeps } from "./deps.ts";
import type { ApiEnv } from "./env.ts";

/**
 * Around a task-changing call: `beforeChange` may refuse it (an HA follower redirects), and
 * `afterChange` is awaited before the answer, whatever the call's outcome (HA: the change is stored).
 */
export function changeHooks(deps: Pick<ApiDeps, "beforeChange" | "afterChange">, action?: "approve" | "reject" | "drift"): MiddlewareHandler<ApiEnv> {
  return async (c, next) => {
    const task = c.get("task");
    await deps.beforeChange?.({ method: c.req.method, ...(task ? { task } : {}), ...(action ? { action } : {}) });
    try {
      await next();
    } finally {
      await deps.afterChange?.().catch(() => undefined);
    }
  };
}
