import type { Problem } from "../errors/problems.ts";
import type { ApiConfig } from "./types.ts";

// What `api.allowedHosts` and `api.allowedOrigins` may hold: the config checks them at load with
// the same parsing the API's browser guard (src/api/browser-guard.ts) applies to each request.

/** Splits a Host header into a lower-case name (IPv6 without brackets) and a port (undefined when absent). */
export function parseHost(header: string): { name: string; port: number | undefined } | undefined {
  const m = /^(\[[0-9a-f:.]+\]|[^:[\]\s]+)(?::(\d{1,5}))?$/i.exec(header.trim());
  if (!m) return undefined;
  const name = m[1]!.replace(/^\[|\]$/g, "").toLowerCase().replace(/\.$/, "");
  return { name, port: m[2] === undefined ? undefined : Number(m[2]) };
}

/** An origin as browsers serialize it: lower-case scheme and host, no default port, no path. */
export function normalizeOrigin(origin: string): string | undefined {
  try {
    const u = new URL(origin);
    return u.origin === "null" ? undefined : u.origin;
  } catch {
    return undefined;
  }
}

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
