import type { Context, MiddlewareHandler } from "hono";
import { getPath } from "hono/utils/url";
import { taskNameProblem } from "../task/validate.ts";
import type { ApiEnv } from "./env.ts";
import { ApiError } from "./http-error.ts";

/**
 * What the request line asks: its path as sent, the methods a path takes, the task name in it and
 * its query parameters. The path is NOT normalized: `/v1/tasks/../x` must reach the task-name check
 * and be refused there, not quietly turn into `/v1/x`.
 */

/**
 * Hono's `getPath`: routes match the raw path, undecoded and with its dot segments. Under
 * `app.request` (unit tests) there is none, the Request's URL is already normalized: Hono's own path.
 */
export function rawPath(req: Request, options?: { env?: ApiEnv["Bindings"] }): string {
  const raw = options?.env?.incoming?.url;
  return raw === undefined ? getPath(req) : raw.split("?")[0]!;
}

/** 405 with Allow for a method the path does not take (HEAD included: Hono would answer it as GET). */
export function allow(...methods: string[]): MiddlewareHandler<ApiEnv> {
  return async (c, next) => {
    if (!methods.includes(c.req.method))
      throw new ApiError(405, `'${c.req.method}' is not supported on '${c.req.path.slice(0, 200)}'. Use ${methods.join(" or ")}.`, { allow: methods.join(", ") });
    await next();
  };
}

/** The `:name` segment as sent: Hono's own decoding lets a bad escape through unchanged, the check below must see it. */
function rawParam(c: Context<ApiEnv>): string {
  const [before = "", after = ""] = c.req.routePath.split(/:name(?:\{[^}]*\})?/);
  return c.req.path.slice(before.length, c.req.path.length - after.length);
}

/** The task name from the path (`:name`), percent-decoded and checked, into `c.var.task`; 400 naming the problem. */
export const taskName: MiddlewareHandler<ApiEnv> = async (c, next) => {
  const raw = rawParam(c);
  let name: string;
  try {
    name = decodeURIComponent(raw);
  } catch {
    throw new ApiError(400, `the task name in the path ('${raw.slice(0, 60)}') is not valid percent-encoding.`);
  }
  const problem = taskNameProblem(name);
  if (problem) throw new ApiError(400, `task name ${problem}`);
  c.set("task", name);
  await next();
};

/** The query parameters a route takes, each with its allowed values (matched case-insensitively). */
export type QuerySpec = Record<string, readonly string[]>;

/** Checks the query against `spec` (unknown, repeated or unsupported parameters: 400) into `c.var.query`, values lower-cased. */
export function queryParams(spec: QuerySpec = {}): MiddlewareHandler<ApiEnv> {
  return async (c, next) => {
    // The query as sent (Node's raw target), or the URL's under `app.request` (unit tests).
    const target = c.env?.incoming?.url ?? c.req.url;
    const q = target.indexOf("?");
    const query = new URLSearchParams(q < 0 ? "" : target.slice(q + 1));
    const checked: Record<string, string> = {};
    for (const key of new Set(query.keys())) {
      const allowed = spec[key];
      if (!allowed) {
        const known = Object.keys(spec);
        throw new ApiError(400, `unknown query parameter '${key.slice(0, 60)}'. ${known.length ? `This route takes: ${known.join(", ")}.` : "This route takes none."}`);
      }
      const values = query.getAll(key);
      if (values.length !== 1) throw new ApiError(400, `query parameter '${key}' is given ${values.length} times. Give it once.`);
      const value = values[0]!.toLowerCase();
      if (!allowed.includes(value)) throw new ApiError(400, `unsupported value '${values[0]!.slice(0, 60)}' for '${key}'. Use ${allowed.map((a) => `${key}=${a}`).join(" or ")}.`);
      checked[key] = value;
    }
    c.set("query", checked);
    await next();
  };
}

/** 400 for a path that is not in normal form (dot segments, encoded dots): what it names is not what the client sent. */
export const normalPath: MiddlewareHandler<ApiEnv> = async (c, next) => {
  if (c.env?.incoming && c.req.path !== new URL(c.req.url).pathname)
    throw new ApiError(400, `the path '${c.req.path.slice(0, 200)}' is not in normal form (dot segments, encoded dots). Send the plain path.`);
  await next();
};

/** The 404 of a path no route takes, listing the routes. */
export function noRoute(path: string): ApiError {
  return new ApiError(
    404,
    `no route for '${path.slice(0, 200)}'. Routes: /v1/status, /v1/status/tasks[/{name}], /v1/tasks[/{name}], /v1/tasks/{name}/drift, /v1/tasks/{name}/approve, /v1/tasks/{name}/reject, /v1/tasks/{name}/runs, /v1/tasks/{name}/outputs, /v1/health, /v1/status/cluster, /metrics, /ui.`,
  );
}
