import type { MiddlewareHandler } from "hono";
import { jsonWithRequestId } from "../answer.ts";
import type { ApiController, ApiDeps } from "../deps.ts";
import type { ApiEnv } from "../env.ts";
import { ApiError } from "../http-error.ts";
import { existingTask } from "./kit.ts";

/**
 * Shared cluster mode, `PATCH /v1/tasks/{name}` with `{"pin": …}`: any member stores the pin (the
 * change hooks are not called), and the owners move when every member sees it. Any other
 * body goes on to the ordinary PATCH.
 */
export function pinRequest(ctrl: ApiController, pin: NonNullable<ApiDeps["pin"]>): MiddlewareHandler<ApiEnv> {
  return async (c, next) => {
    const raw = c.get("body");
    if (raw === null || typeof raw !== "object" || Array.isArray(raw) || !("pin" in raw)) return next();
    const task = c.get("task");
    const { pin: member, ...rest } = raw as Record<string, unknown>;
    if (Object.keys(rest).length > 0) throw new ApiError(400, `send "pin" alone: {"pin":"<member id>"} moves the task to that member, {"pin":null} lets the cluster place it.`);
    if (member !== null && typeof member !== "string") throw new ApiError(400, `"pin" must be a member id (see GET /v1/status/cluster) or null.`);
    existingTask(ctrl, task);
    await pin(task, member);
    return jsonWithRequestId(c, 200, { task: { name: task, pin: member } });
  };
}
