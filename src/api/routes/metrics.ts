import type { ApiApp } from "../env.ts";
import { ApiError } from "../http-error.ts";
import { allow, queryParams } from "../request-target.ts";
import type { RouteKit } from "./kit.ts";

/** `GET /metrics`: the Prometheus text, behind the token with `api.metricsRequireToken`. */
export function metricsRoutes(app: ApiApp, { deps, guard }: RouteKit, requireToken: boolean): void {
  app.all("/metrics", allow("GET"));
  app.get("/metrics", queryParams(), ...guard(requireToken), async (c) => {
    if (!deps.metrics) throw new ApiError(404, "metrics are not served by this API.");
    const { contentType, body } = await deps.metrics();
    return c.body(body, 200, { "content-type": contentType, "cache-control": "no-store" });
  });
}
