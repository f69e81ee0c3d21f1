import type { Context } from "hono";
import { jsonAnswer, jsonWithRequestId } from "../answer.ts";
import { overallStatus, taskStatus, type CtsTaskStatus } from "../../cts/api/shape.ts";
import type { ApiApp, ApiEnv } from "../env.ts";
import { ApiError } from "../http-error.ts";
import { allow, queryParams, taskName } from "../request-target.ts";
import { existingTask, type RouteKit } from "./kit.ts";

const STATUS_QUERY = { include: ["events"], status: ["successful", "errored", "critical", "unknown"] } as const;

/** `/v1/status` (CTS's overall summary), `/v1/status/tasks[/{name}]` and `/v1/status/cluster` (high availability). */
export function statusRoutes(app: ApiApp, { deps, guard }: RouteKit): void {
  const ctrl = deps.controller;

  app.all("/v1/status", allow("GET"));
  // Beyond CTS: `instance.id` names the instance (how `cts doctor` tells its own daemon on the port from another program).
  const instance = deps.instanceId ? { instance: { id: deps.instanceId } } : {};
  app.get("/v1/status", queryParams(), ...guard(), (c) => jsonAnswer(c, 200, { ...overallStatus(ctrl.taskNames().flatMap((n) => ctrl.view(n) ?? []), deps.consul), ...instance }));

  /** CTS's task statuses by name, filtered by `status`, with events on `include=events`. */
  const taskStatuses = (c: Context<ApiEnv>) => {
    const task = c.get("task");
    if (task !== undefined) existingTask(ctrl, task);
    const { include, status: filter } = c.get("query");
    const out: Record<string, CtsTaskStatus> = {};
    for (const name of task !== undefined ? [task] : ctrl.taskNames()) {
      const v = ctrl.view(name);
      if (!v || (filter && v.status !== filter)) continue;
      out[name] = taskStatus(v, ctrl.events.list(name), include === "events", ctrl.taskOutputs?.(name));
    }
    return jsonAnswer(c, 200, out);
  };
  app.all("/v1/status/tasks", allow("GET"));
  app.get("/v1/status/tasks", queryParams(STATUS_QUERY), ...guard(), taskStatuses);
  // `{.*}`: an empty or slashed name reaches the name check and is refused there (400), not answered 404.
  app.all("/v1/status/tasks/:name{.*}", allow("GET"), taskName);
  app.get("/v1/status/tasks/:name{.*}", queryParams(STATUS_QUERY), ...guard(), taskStatuses);

  app.all("/v1/status/cluster", allow("GET"));
  app.get("/v1/status/cluster", queryParams(), ...guard(), async (c) => {
    if (!deps.cluster) throw new ApiError(405, "high availability is not configured on this instance, so there is no cluster status. Run cts with high availability to use this endpoint.");
    return jsonWithRequestId(c, 200, await deps.cluster());
  });
}
