import type { MiddlewareHandler } from "hono";
import { decodeCreateRequest, decodePatchRequest } from "../cts/api/decode.ts";
import type { ApiEnv } from "./env.ts";
import { parseJsonBody, readLimitedBody } from "./request-body.ts";

// zod and the request schemas load with the first request that creates or changes a task: a daemon
// whose tasks nobody changes through the API never holds them (about 10 MB resident).
/** The create and task schemas (task-request.ts), loaded on first use. */
export const requestSchemas = () => import("./task-request.ts");
/** The PATCH schema (task-patch.ts), loaded on first use. */
export const patchSchemas = () => import("./task-patch.ts");

/** Reads the request's JSON body, at most `limit` bytes, into `c.var.body` (413 past the limit, 400 when not JSON). */
export function jsonBody(limit: number): MiddlewareHandler<ApiEnv> {
  return async (c, next) => {
    c.set("body", parseJsonBody(await readLimitedBody(c.req.raw.body, c.req.header("content-length"), limit)));
    await next();
  };
}

/** Validates `POST /v1/tasks`'s body (CTS's JSON: keys folded, variables decoded) into `c.var.spec`; 400 listing every problem. */
export function createBody(driver: "terraform" | "terraformCloud" = "terraform"): MiddlewareHandler<ApiEnv> {
  return async (c, next) => {
    const { parseCreateBody } = await requestSchemas();
    c.set("spec", parseCreateBody(await decodeCreateRequest(c.get("body")), { driver }));
    await next();
  };
}

/** Validates `PATCH /v1/tasks/{name}`'s body into `c.var.patch`; 400 naming every problem. */
export const patchBody: MiddlewareHandler<ApiEnv> = async (c, next) => {
  const { parsePatchBody } = await patchSchemas();
  c.set("patch", parsePatchBody(await decodePatchRequest(c.get("body")), c.get("task")));
  await next();
};
