import type { ApiConfig } from "../config/types.ts";
import type { Problem } from "../task/validate.ts";
import { normalizeOrigin, parseHost } from "./browser-guard.ts";

/** Problems of `api.allowedOrigins` and `api.allowedHosts` (config load fails fast on them). */
export function apiAccessProblems(api: ApiConfig | undefined): Problem[] {
  const problems: Problem[] = [];
  const list = (field: "allowedOrigins" | "allowedHosts", valid: (v: string) => boolean, example: string) => {
    const v = api?.[field];
    if (v === undefined) return;
    if (!Array.isArray(v) || v.some((x) => typeof x !== "string")) {
      problems.push({ field: `api.${field}`, message: `must be a list of strings, e.g. ${example}.` });
      return;
    }
    for (const [i, x] of v.entries()) if (!valid(x)) problems.push({ field: `api.${field}[${i}]`, message: `'${x.slice(0, 100)}' is not valid. Use e.g. ${example}.` });
  };
  list("allowedOrigins", (o) => o !== "*" && normalizeOrigin(o) !== undefined && !/\/[^/]/.test(o.replace(/^[a-z]+:\/\//i, "")), `["https://dash.example:8443"] (scheme, host and port; no path, no "*")`);
  list("allowedHosts", (h) => parseHost(h) !== undefined, `["cts.internal", "cts.internal:8558"]`);
  const metricsToken = api?.metricsRequireToken;
  if (metricsToken !== undefined && typeof metricsToken !== "boolean") problems.push({ field: "api.metricsRequireToken", message: "must be true or false." });
  return problems;
}
