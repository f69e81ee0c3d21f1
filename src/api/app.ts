import type { HttpBindings } from "@hono/node-server";
import { Hono, type Context } from "hono";
import { cors } from "hono/cors";
import { requestId } from "hono/request-id";
import { CtsError, messageOf } from "../errors.ts";
import { knownSecrets } from "../secrets/redactor.ts";
import { checkBearer } from "./auth.ts";
import { contentTypeProblem, hostProblem, originProblem, type BoundAddress, type BrowserGuardOptions } from "./browser-guard.ts";
import { apiErrorOf, createHandlers, type ApiDeps } from "./handlers.ts";
import { ApiError, DEFAULT_BODY_LIMIT_BYTES, parseJsonBody, readLimitedBody, REQUEST_ID_HEADER } from "./http-io.ts";
import { route, type Match, type RouteName } from "./router.ts";
import { mountUi } from "./ui.ts";

/** Access settings of the API app. */
export interface ApiAppOptions extends BrowserGuardOptions {
  /** Bearer token required on task-changing routes. */
  token?: string;
  /** `GET /metrics` needs the token too (`api.metricsRequireToken`). */
  metricsRequireToken?: boolean;
  /** The API serves HTTPS (a Host without a port means 443). */
  tls?: boolean;
  /** Where the server listens; read per request (known once listening). Without it Host is not checked (unit tests). */
  bound?: () => BoundAddress | undefined;
}

type Env = { Bindings: Partial<HttpBindings>; Variables: { requestId: string; match: Match } };

// CTS puts request_id in the body of task routes; status and health keep their exact CTS shapes.
const BODY_REQUEST_ID = new Set<RouteName>(["tasks", "task", "task-drift", "task-approve", "task-reject", "status-cluster"]);

/**
 * Answers JSON (known secrets scrubbed: defence in depth behind the driver's redaction). The type is
 * exactly `application/json`, no charset: CTS's Go client parses error bodies only then.
 */
function json(c: Context<Env>, status: number, body: unknown, headers: Record<string, string> = {}): Response {
  const text = JSON.stringify(knownSecrets.redactDeep(body)) + "\n";
  return c.body(text, status as 200, { "content-type": "application/json", "cache-control": "no-store", ...headers });
}

/**
 * The CTS-compatible API as a Hono app. Order matters: the Host check comes first (a rebound DNS
 * name learns nothing, not even a 404), then the raw-path check, then the browser checks and the
 * token on task-changing routes, then the body limit and the route.
 */
export function createApiApp(deps: ApiDeps, opts: ApiAppOptions = {}): Hono<Env> & { closeStreams(): void } {
  const handle = createHandlers(deps);
  const log = deps.log;
  const app = new Hono<Env>();

  app.use(requestId({ headerName: REQUEST_ID_HEADER }));

  app.use(async (c, next) => {
    const started = Date.now();
    await next();
    const path = (c.env?.incoming?.url ?? c.req.path).split("?")[0]!.slice(0, 200);
    log.debug(`${c.req.method} ${path} ${c.res.status}`, { request_id: c.get("requestId"), ms: Date.now() - started });
  });

  app.use(async (c, next) => {
    const bound = opts.bound?.();
    const problem = bound && hostProblem(c.req.header("host"), bound, opts.tls === true, opts);
    if (problem) throw problem;
    await next();
  });

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

  app.use(async (c, next) => {
    // The raw target, before any URL normalisation: `/v1/tasks/../x` must be refused, not become `/v1/x`.
    const raw = c.env?.incoming?.url ?? c.req.path + new URL(c.req.url).search;
    const match = route(c.req.method, raw);
    const rawPath = raw.split("?")[0]!;
    if (c.env?.incoming && rawPath !== new URL(c.req.url).pathname)
      throw new ApiError(400, `the path '${rawPath.slice(0, 200)}' is not in normal form (dot segments, encoded dots). Send the plain path.`);
    c.set("match", match);
    // The dashboard's own page (/ui) is same-origin. That origin is only trusted once the Host check
    // above has run (a rebound DNS name never gets here), so without `bound` (unit tests) it is not.
    const self = opts.bound?.() ? `${opts.tls ? "https" : "http"}://${c.req.header("host")}` : undefined;
    const problem = contentTypeProblem(c.req.method, c.req.header("content-type")) ?? originProblem(c.req.method, c.req.header("origin"), opts, self);
    if (problem) throw problem;
    checkBearer(c.req.method, c.req.header("authorization"), opts.token, match.route === "metrics" && opts.metricsRequireToken === true);
    await next();
  });

  const limit = deps.bodyLimitBytes ?? DEFAULT_BODY_LIMIT_BYTES;
  const serve = async (c: Context<Env>) => {
    const m = c.get("match");
    const answer = await handle(m, async () => parseJsonBody(await readLimitedBody(c.req.raw.body, c.req.header("content-length"), limit)));
    const body = BODY_REQUEST_ID.has(m.route) ? { ...answer.body, request_id: c.get("requestId") } : answer.body;
    return json(c, answer.status, body);
  };

  const ui = mountUi(app, { controller: deps.controller, ...(deps.cluster ? { cluster: deps.cluster } : {}), ...(deps.consul ? { consul: deps.consul } : {}), tokenRequired: opts.token !== undefined });

  app.get("/v1/health", serve);
  app.get("/v1/status", serve);
  app.get("/v1/status/cluster", serve);
  app.get("/v1/status/tasks", serve);
  app.get("/v1/status/tasks/:name", serve);
  app.get("/v1/tasks", serve);
  app.post("/v1/tasks", serve);
  app.get("/v1/tasks/:name", serve);
  app.patch("/v1/tasks/:name", serve);
  app.delete("/v1/tasks/:name", serve);
  app.get("/metrics", async (c) => {
    if (!deps.metrics) throw new ApiError(404, "metrics are not served by this API.");
    const { contentType, body } = await deps.metrics();
    return c.body(body, 200, { "content-type": contentType, "cache-control": "no-store" });
  });
  app.post("/v1/tasks/:name/drift", serve);
  app.post("/v1/tasks/:name/approve", serve);
  app.post("/v1/tasks/:name/reject", serve);

  // route() has already answered every path and method; this is only reached for a Hono/route() mismatch.
  app.notFound((c) => json(c, 404, { error: { message: `no route for '${c.req.path.slice(0, 200)}'.` }, request_id: c.get("requestId") }));

  app.onError((err, c) => {
    const apiErr = err instanceof ApiError ? err : err instanceof CtsError ? apiErrorOf(err) : new ApiError(500, `internal error: ${messageOf(err)}`);
    // 503 is the health endpoint's answer, not a server failure: health checks poll it often.
    if (apiErr.status >= 500 && apiErr.status !== 503)
      log.error(`${c.req.method} ${(c.env?.incoming?.url ?? c.req.path).split("?")[0]!.slice(0, 200)}: ${apiErr.message}`, { request_id: c.get("requestId") });
    return json(c, apiErr.status, { error: { message: apiErr.message }, request_id: c.get("requestId") }, apiErr.headers);
  });

  return Object.assign(app, { closeStreams: ui.close });
}
