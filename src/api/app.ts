import { Hono } from "hono";
import { cors } from "hono/cors";
import { requestId } from "hono/request-id";
import { createKeyedSerializer } from "../driver/serial.ts";
import { errorAnswer } from "./answer.ts";
import { bearerAuth } from "./auth.ts";
import { browserGuard, hostGuard, type ServedAt } from "./browser-guard.ts";
import type { ApiDeps } from "./deps.ts";
import { REQUEST_ID_HEADER, type ApiApp, type ApiEnv } from "./env.ts";
import { httpErrorOf } from "./http-error.ts";
import { DEFAULT_BODY_LIMIT_BYTES } from "./request-body.ts";
import { requestLog } from "./request-log.ts";
import { noRoute, normalPath, rawPath } from "./request-target.ts";
import { healthRoutes } from "./routes/health.ts";
import type { RouteKit } from "./routes/kit.ts";
import { metricsRoutes } from "./routes/metrics.ts";
import { statusRoutes } from "./routes/status.ts";
import { taskActionRoutes } from "./routes/task-actions.ts";
import { taskRoutes } from "./routes/tasks.ts";
import { taskRunRoutes } from "./routes/task-runs.ts";
import { mountUi } from "./ui.ts";

/** Access settings of the API app. */
export interface ApiAppOptions extends ServedAt {
  /** Bearer token required on task-changing routes. */
  token?: string;
  /** `GET /metrics` needs the token too (`api.metricsRequireToken`). */
  metricsRequireToken?: boolean;
}

/**
 * The CTS-compatible API as a Hono app, routed on the raw path (`rawPath`). Every request passes,
 * in order: its request id and log line; the Host check (a rebound DNS name learns nothing, not
 * even a 404); CORS for the allowed origins. Then each route's own chain, as it declares it: the
 * methods the path takes (405), the task name in it, its query; the guard (normal path, browser
 * checks, token); on task-changing routes the change hooks and the body; the handler. Every error
 * is an ApiError (hono's HTTPException) rendered by onError.
 */
export function createApiApp(deps: ApiDeps, opts: ApiAppOptions = {}): ApiApp & { closeStreams(): void } {
  const app = new Hono<ApiEnv>({ getPath: rawPath });

  app.use(requestId({ headerName: REQUEST_ID_HEADER }));
  app.use(requestLog(deps.log));
  app.use(hostGuard(opts));
  // A browser dashboard at an allowed origin needs CORS (its JSON POST is preflighted); no one else gets it.
  if (opts.allowedOrigins?.length)
    app.use(
      cors({
        origin: [...opts.allowedOrigins],
        allowMethods: ["GET", "POST", "PATCH", "DELETE"],
        allowHeaders: ["content-type", "authorization"],
        exposeHeaders: [REQUEST_ID_HEADER],
      }),
    );

  const kit: RouteKit = {
    deps,
    guard: (readsNeedToken = false) => [normalPath, browserGuard(opts), bearerAuth(opts.token, readsNeedToken)],
    locks: createKeyedSerializer(),
    bodyLimit: deps.bodyLimitBytes ?? DEFAULT_BODY_LIMIT_BYTES,
  };
  const ui = mountUi(app, { controller: deps.controller, ...(deps.cluster ? { cluster: deps.cluster } : {}), ...(deps.consul ? { consul: deps.consul } : {}), tokenRequired: opts.token !== undefined }, kit.guard());
  healthRoutes(app, kit);
  statusRoutes(app, kit);
  taskActionRoutes(app, kit);
  taskRunRoutes(app, kit);
  taskRoutes(app, kit);
  metricsRoutes(app, kit, opts.metricsRequireToken === true);

  app.notFound((c) => errorAnswer(c, noRoute(c.req.path)));

  app.onError((err, c) => {
    const apiErr = httpErrorOf(err);
    // 503 is the health endpoint's answer, not a server failure: health checks poll it often.
    if (apiErr.status >= 500 && apiErr.status !== 503)
      deps.log.error(`${c.req.method} ${(c.env?.incoming?.url ?? c.req.path).split("?")[0]!.slice(0, 200)}: ${apiErr.message}`, { request_id: c.get("requestId") });
    return errorAnswer(c, apiErr);
  });

  return Object.assign(app, { closeStreams: ui.close });
}
