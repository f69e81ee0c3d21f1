import type { Context } from "hono";
import { knownSecrets } from "../secrets/redactor.ts";
import type { ApiEnv } from "./env.ts";
import type { ApiError } from "./http-error.ts";

/**
 * Answers JSON (known secrets scrubbed: defence in depth behind the driver's redaction). The type is
 * exactly `application/json`, no charset: CTS's Go client parses error bodies only then.
 */
export function jsonAnswer(c: Context<ApiEnv>, status: number, body: unknown, headers: Record<string, string> = {}): Response {
  const text = JSON.stringify(knownSecrets.redactDeep(body)) + "\n";
  return c.body(text, status as 200, { "content-type": "application/json", "cache-control": "no-store", ...headers });
}

/** An answer with `request_id` in its body, as CTS gives it on task routes and the cluster status (status and health keep CTS's exact shapes). */
export function jsonWithRequestId(c: Context<ApiEnv>, status: number, body: Record<string, unknown>): Response {
  return jsonAnswer(c, status, { ...body, request_id: c.get("requestId") });
}

/** Every error's body: `{"error":{"message":…},"request_id":…}`, with the error's headers. */
export function errorAnswer(c: Context<ApiEnv>, err: ApiError): Response {
  return jsonAnswer(c, err.status, { error: { message: err.message }, request_id: c.get("requestId") }, err.headers);
}
