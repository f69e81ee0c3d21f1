import { isIP } from "node:net";
import type { MiddlewareHandler } from "hono";
import { normalizeOrigin, parseHost } from "../config/api-access.ts";
import type { ApiEnv } from "./env.ts";
import { ApiError } from "./http-error.ts";

/**
 * Checks that keep a web page the operator happens to open from driving the API. With no token
 * (CTS's default) the API is open to anything that can reach it, and a browser can reach
 * 127.0.0.1: a page may POST `text/plain` cross-site without a preflight (a "simple" request), or
 * rebind its own DNS name to 127.0.0.1 and then talk to us as its own origin.
 */

/** Methods that change tasks or infrastructure. */
export const CHANGING_METHODS = new Set(["POST", "PATCH", "PUT", "DELETE"]);

/** Where the API listens, as the Host check needs it. */
export interface BoundAddress {
  address: string;
  port: number;
}

/** What the operator allows beyond the API's own address and loopback names. */
export interface BrowserGuardOptions {
  /** Host names (optionally `name:port`) clients use to reach the API, e.g. a DNS name of this machine. */
  allowedHosts?: readonly string[];
  /** Browser origins (`https://dash.example:8443`) allowed to change tasks. */
  allowedOrigins?: readonly string[];
}

const LOOPBACK_NAMES = new Set(["localhost", "127.0.0.1", "::1"]);
const WILDCARDS = new Set(["0.0.0.0", "::", ""]);

/**
 * Refuses a request whose Host is not this API (DNS rebinding: the attacker's name resolving to
 * us). Accepted: loopback names and the bound address with the bound port; with a wildcard bind
 * any IP literal with the bound port (an IP in Host means no DNS name was rebound); names in
 * `allowedHosts` (with any port, or the port they give).
 */
export function hostProblem(header: string | undefined, bound: BoundAddress, tls: boolean, opts: BrowserGuardOptions = {}): ApiError | undefined {
  const refuse = (why: string) =>
    new ApiError(
      421,
      `${why} This API answers only to its own address (${bound.address}:${bound.port}), localhost, 127.0.0.1 and [::1] with its port, and the names in api.allowedHosts: requests for other host names are refused so that a web page cannot reach it through DNS rebinding. Use one of those addresses, or add the name to api.allowedHosts.`,
    );
  if (!header) return refuse("the request has no Host header.");
  const host = parseHost(header);
  if (!host) return refuse(`the Host header '${header.slice(0, 100)}' is not a host name or address.`);
  const port = host.port ?? (tls ? 443 : 80);
  for (const entry of opts.allowedHosts ?? []) {
    const allowed = parseHost(entry);
    if (allowed && allowed.name === host.name && (allowed.port === undefined || allowed.port === port)) return undefined;
  }
  if (port === bound.port) {
    const own = bound.address.replace(/^\[|\]$/g, "").toLowerCase();
    if (LOOPBACK_NAMES.has(host.name) || host.name === own) return undefined;
    if (WILDCARDS.has(own) && isIP(host.name)) return undefined;
  }
  return refuse(`the Host '${header.slice(0, 100)}' is not this API.`);
}

/**
 * Refuses a task-changing request from a browser page whose origin is not in `allowedOrigins`, or
 * the API's own origin `self` (its dashboard at /ui; the caller passes it only after checking Host).
 */
export function originProblem(method: string, origin: string | undefined, opts: BrowserGuardOptions = {}, self?: string): ApiError | undefined {
  if (!CHANGING_METHODS.has(method) || origin === undefined) return undefined;
  const given = normalizeOrigin(origin);
  if (given && self !== undefined && normalizeOrigin(self) === given) return undefined;
  if (given && (opts.allowedOrigins ?? []).some((o) => normalizeOrigin(o) === given)) return undefined;
  return new ApiError(
    403,
    `a web page at origin '${origin.slice(0, 100)}' may not change tasks: cross-site requests are refused. The cts CLI and curl send no Origin; to let a browser dashboard change tasks, add its origin to api.allowedOrigins.`,
  );
}

/**
 * Refuses a task-changing request whose body is not declared JSON (415). Browsers send `text/plain`,
 * form and multipart bodies cross-site without asking first; `application/json` always needs a
 * preflight, which this API does not grant to unknown origins. DELETE and PATCH without any
 * Content-Type are let through: browsers preflight every cross-site DELETE and PATCH, and CTS's Go
 * client sends its PATCH (`task enable|disable`) with no Content-Type at all.
 */
export function contentTypeProblem(method: string, contentType: string | undefined): ApiError | undefined {
  if (!CHANGING_METHODS.has(method)) return undefined;
  if (contentType === undefined && (method === "DELETE" || method === "PATCH")) return undefined;
  const mediaType = (contentType ?? "").split(";")[0]!.trim().toLowerCase();
  if (mediaType === "application/json") return undefined;
  return new ApiError(
    415,
    `${method} requests must send a JSON body with \`Content-Type: application/json\` (got ${contentType ? `'${contentType.slice(0, 100)}'` : "none"}). The cts CLI does; with curl add -H 'Content-Type: application/json'.`,
  );
}

/** Where the API listens and how: what the Host check and the dashboard's own origin depend on. */
export interface ServedAt extends BrowserGuardOptions {
  /** The API serves HTTPS (a Host without a port means 443). */
  tls?: boolean;
  /** Where the server listens; read per request (known once listening). Without it Host is not checked (unit tests). */
  bound?: () => BoundAddress | undefined;
}

/** The Host check (421): first of all, so a rebound DNS name learns nothing, not even a 404. */
export function hostGuard(opts: ServedAt): MiddlewareHandler<ApiEnv> {
  return async (c, next) => {
    const bound = opts.bound?.();
    const problem = bound && hostProblem(c.req.header("host"), bound, opts.tls === true, opts);
    if (problem) throw problem;
    await next();
  };
}

/** The checks of a browser page's request (415 for a body not declared JSON, 403 for a foreign origin) on task-changing methods. */
export function browserGuard(opts: ServedAt): MiddlewareHandler<ApiEnv> {
  return async (c, next) => {
    // The dashboard's own page (/ui) is same-origin. That origin is only trusted once the Host check
    // has run (a rebound DNS name never gets here), so without `bound` (unit tests) it is not.
    const self = opts.bound?.() ? `${opts.tls ? "https" : "http"}://${c.req.header("host")}` : undefined;
    const problem = contentTypeProblem(c.req.method, c.req.header("content-type")) ?? originProblem(c.req.method, c.req.header("origin"), opts, self);
    if (problem) throw problem;
    await next();
  };
}
