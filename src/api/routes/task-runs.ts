import type { MiddlewareHandler } from "hono";
import { jsonWithRequestId } from "../answer.ts";
import { outputsToApi } from "../../cts/api/shape.ts";
import type { ApiApp, ApiEnv } from "../env.ts";
import { ApiError } from "../http-error.ts";
import { allow, queryParams, taskName } from "../request-target.ts";
import { pageOfRuns } from "../../runtime/history.ts";
import { RUN_ID } from "../../state/records.ts";
import { existingTask, type RouteKit } from "./kit.ts";

/** Runs a page holds by default, and at most. */
export const RUNS_PAGE = { default: 20, max: 100 } as const;

/**
 * Beyond CTS: `GET /v1/tasks/{name}/runs` (the task's run history, a page at a time, newest first)
 * and `GET /v1/tasks/{name}/outputs` (its latest Terraform outputs, sensitive values redacted).
 */
export function taskRunRoutes(app: ApiApp, { deps, guard }: RouteKit): void {
  const ctrl = deps.controller;

  app.all("/v1/tasks/:name/runs", allow("GET"), taskName);
  app.get("/v1/tasks/:name/runs", runsQuery, ...guard(), (c) => {
    const name = c.get("task");
    existingTask(ctrl, name);
    const { limit, before } = c.get("query");
    const size = limit === undefined ? RUNS_PAGE.default : Number(limit);
    const page = pageOfRuns(ctrl.taskRuns?.(name) ?? [], size, before);
    if (!page)
      throw new ApiError(400, `'before=${before}' names no run kept of task '${name}' (the retention may have dropped it). Start again without 'before'.`);
    const path = `/v1/tasks/${encodeURIComponent(name)}/runs`;
    return jsonWithRequestId(c, 200, {
      task: name,
      total: page.total,
      runs: page.runs,
      ...(page.next ? { next: page.next, next_url: `${path}?limit=${size}&before=${page.next}` } : {}),
    });
  });

  app.all("/v1/tasks/:name/outputs", allow("GET"), taskName);
  app.get("/v1/tasks/:name/outputs", queryParams(), ...guard(), (c) => {
    const name = c.get("task");
    existingTask(ctrl, name);
    const kept = ctrl.taskOutputs?.(name);
    return jsonWithRequestId(c, 200, { task: name, ...(kept ? { outputs: outputsToApi(kept) } : { outputs: null }) });
  });
}

/** The runs route's query: `limit` (1–100, default 20) and `before` (the `next` of the page before); anything else is a 400. */
const runsQuery: MiddlewareHandler<ApiEnv> = async (c, next) => {
  const target = c.env?.incoming?.url ?? c.req.url;
  const q = target.indexOf("?");
  const query = new URLSearchParams(q < 0 ? "" : target.slice(q + 1));
  const checked: Record<string, string> = {};
  for (const key of new Set(query.keys())) {
    if (key !== "limit" && key !== "before") throw new ApiError(400, `unknown query parameter '${key.slice(0, 60)}'. This route takes: limit, before.`);
    const values = query.getAll(key);
    if (values.length !== 1) throw new ApiError(400, `query parameter '${key}' is given ${values.length} times. Give it once.`);
    const value = values[0]!;
    if (key === "limit" && !(/^\d{1,3}$/.test(value) && Number(value) >= 1 && Number(value) <= RUNS_PAGE.max))
      throw new ApiError(400, `'limit=${value.slice(0, 60)}' is not a whole number from 1 to ${RUNS_PAGE.max}.`);
    if (key === "before" && !RUN_ID.test(value)) throw new ApiError(400, `'before=${value.slice(0, 60)}' is not a run id. Pass the 'next' of the page before.`);
    checked[key] = value;
  }
  c.set("query", checked);
  await next();
};
