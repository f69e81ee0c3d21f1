import type { HttpBindings } from "@hono/node-server";
import type { Hono } from "hono";
import type { ModuleTaskSpec } from "../synth/task-ref.ts";
import type { PatchRequest } from "./task-patch.ts";

/** What the middleware leaves on a request's context for the routes. */
export interface ApiVariables {
  /** The request's id (hono/request-id), in the X-Request-Id header and task bodies. */
  requestId: string;
  /** The task name from the path, percent-decoded and checked (routes with `:name`). */
  task: string;
  /** The query parameters, checked against the route's and lower-cased. */
  query: Record<string, string>;
  /** The request's JSON body, within the size and depth limits. */
  body: unknown;
  /** `POST /v1/tasks`'s task, validated. */
  spec: ModuleTaskSpec;
  /** `PATCH /v1/tasks/{name}`'s changes, validated. */
  patch: PatchRequest;
}

/** The API's Hono environment: Node's bindings (absent under `app.request` in unit tests) and the variables above. */
export type ApiEnv = { Bindings: Partial<HttpBindings>; Variables: ApiVariables };

/** The API's Hono app. */
export type ApiApp = Hono<ApiEnv>;

/** The request header (and response header) carrying the request id. */
export const REQUEST_ID_HEADER = "x-request-id";
