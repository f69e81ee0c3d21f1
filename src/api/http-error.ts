import { HTTPException } from "hono/http-exception";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { CtsError, messageOf } from "../errors/cts-error.ts";

/**
 * The API's one HTTP error: a status, the message the client reads (what, why, how to fix) and
 * extra headers (Allow on 405, WWW-Authenticate on 401). app.ts's onError renders every one.
 */
export class ApiError extends HTTPException {
  constructor(
    status: number,
    message: string,
    /** Extra headers of the answer. */
    readonly headers: Record<string, string> = {},
  ) {
    super(status as ContentfulStatusCode, { message });
    this.name = "ApiError";
  }
}

/** Maps a CtsError from the runtime to an API error (`detail.status`, when set, wins). */
export function apiErrorOf(err: CtsError): ApiError {
  const status = err.detail.status;
  if (typeof status === "number" && Number.isInteger(status) && status >= 400 && status <= 599) return new ApiError(status, err.message);
  if (err.code === "TASK_NOT_FOUND") return new ApiError(404, err.message);
  // CTS answers a duplicate create with 400, not 409: its clients expect that.
  if (err.code === "TASK_EXISTS") return new ApiError(400, err.message);
  return new ApiError(err.category === "usage" ? 400 : 500, err.message);
}

/** Whatever a route threw, as the API's error: a CtsError by its code, anything else unexpected a 500. */
export function httpErrorOf(err: unknown): ApiError {
  if (err instanceof ApiError) return err;
  if (err instanceof HTTPException) return new ApiError(err.status, err.message);
  if (err instanceof CtsError) return apiErrorOf(err);
  return new ApiError(500, `internal error: ${messageOf(err)}`);
}
