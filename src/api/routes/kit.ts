import type { MiddlewareHandler } from "hono";
import type { KeyedSerializer } from "../../driver/serial.ts";
import type { TaskView } from "../../runtime/interfaces.ts";
import type { ApiController, ApiDeps } from "../deps.ts";
import type { ApiEnv } from "../env.ts";
import { ApiError } from "../http-error.ts";

/** What the route files share. */
export interface RouteKit {
  deps: ApiDeps;
  /**
   * The checks every route takes once its path, method, task name and query are known: normal path,
   * browser guard, bearer token (`readsNeedToken`: on GET too, for `/metrics`).
   */
  guard(readsNeedToken?: boolean): MiddlewareHandler<ApiEnv>[];
  /** One mutation per task at a time (CTS holds a mutex for the same reason). */
  locks: KeyedSerializer;
  /** Largest request body read, in bytes. */
  bodyLimit: number;
}

/** The task's view; 404 when there is no such task. */
export function existingTask(ctrl: ApiController, name: string): TaskView {
  const v = ctrl.view(name);
  if (!v) throw new ApiError(404, `no task named '${name}'. List tasks with GET /v1/tasks or \`cts task list\`.`);
  return v;
}
