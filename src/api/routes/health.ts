import { jsonAnswer } from "../answer.ts";
import type { ApiApp } from "../env.ts";
import { ApiError } from "../http-error.ts";
import { allow, queryParams } from "../request-target.ts";
import type { RouteKit } from "./kit.ts";

/** `GET /v1/health`: 200 `{}`, or 503 saying why the daemon is unhealthy (CTS's shape). */
export function healthRoutes(app: ApiApp, { deps, guard }: RouteKit): void {
  app.all("/v1/health", allow("GET"));
  app.get("/v1/health", queryParams(), ...guard(), async (c) => {
    const problem = await deps.health?.();
    if (problem) throw new ApiError(503, `unhealthy: ${problem}`);
    return jsonAnswer(c, 200, {});
  });
}
