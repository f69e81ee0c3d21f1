import { EventEmitter } from "node:events";
import { CtsError } from "../errors/cts-error.ts";
import { noMetrics, type Metrics } from "../metrics/metrics.ts";
import { abortError, toConsulError, type CallDescription } from "./api-error.ts";
import { basicAuthHeader, httpsOptions, type ConsulConnection } from "./connection.ts";
import { openPackageClient, type Answer, type CommonCallOptions, type PackageClient } from "./package.ts";
import { rawGet, type RawGetTarget } from "./raw-get.ts";
import type { AnswerKind, ReachabilityTracker } from "./reachability.ts";
import { createSocketPool } from "./socket-pool.ts";

/** Where a call goes: Consul's datacenter, namespace and admin partition (all optional). */
export interface ConsulScope {
  datacenter?: string;
  namespace?: string;
  partition?: string;
}

/** Blocking-query and cancellation options every call takes. */
export interface CallOptions {
  /** Block until Consul's index passes this (0 or absent: answer at once). */
  index?: bigint;
  /** How long Consul may block, in ms (default 5 min; Consul caps it at 10 min). */
  wait?: number;
  /** Cancels the request (the socket is closed, the promise rejects with an AbortError). */
  signal?: AbortSignal;
  /** Hard limit of a non-blocking exchange (default 60 s). */
  timeoutMs?: number;
  /**
   * What an answer says about Consul (reachability.ts): default `servers`, a real answer. The
   * agent's own endpoints say `agent` (it answers them without a leader); `/v1/status/leader`
   * says `no-leader` for an empty answer.
   */
  answeredBy?: (body: unknown) => AnswerKind;
}

/** One answer: its body (absent on a 404 KV read), X-Consul-Index and the ACL-filtered flag. */
export interface Reply<T> {
  data: T | undefined;
  index: bigint;
  status: number;
  /** Consul left out entries the token may not read (X-Consul-Results-Filtered-By-ACLs). */
  filtered: boolean;
}

/** Turns what the HTTP layer threw into the caller's CtsError (default: toConsulError). */
export type ErrorMapper = (err: unknown, call: CallDescription) => CtsError;

/**
 * The one HTTP stack to Consul: one keep-alive socket pool (one http(s).Agent for the life of the
 * process), one TLS builder, the token and the namespaces. The `consul` package's public methods
 * and the raw GETs of the watch both run on it.
 */
export interface ConsulTransport {
  /** Runs one call of the package's public API with the token, scope, blocking options and cancellation applied. */
  call<T>(
    desc: Omit<CallDescription, "url">,
    scope: ConsulScope,
    opts: CallOptions,
    run: (client: PackageClient, common: CommonCallOptions) => Promise<Answer<T>>,
    mapError?: ErrorMapper,
  ): Promise<Reply<T>>;
  /**
   * A GET of `path` (under /v1) with `query`, the blocking options, scope, token and cancellation
   * applied, answered with the raw body: the watch's health queries, thousands of which wait at
   * once, so a waiting one holds one request (raw-get.ts) and one promise step. `describe` is
   * called only to word an error.
   */
  get(describe: () => Omit<CallDescription, "url">, scope: ConsulScope, opts: CallOptions, path: string, query?: Record<string, string> | URLSearchParams): Promise<Reply<Buffer>>;
  /** Consul's URL for messages (never carries the token). */
  url(): string;
  /** Sends every later call with this token (a rotated token file); calls in flight finish with the old one. */
  setToken(token: string | undefined): void;
  /** Closes the pooled sockets. */
  close(): void;
  /**
   * Stopping while Consul is unreachable: every later call fails at once with CONSUL_UNREACHABLE
   * (`reason` in its message), and the calls in flight fail now (their sockets are destroyed), so
   * nothing waits on a Consul that is gone. Counted in `refusedCalls`.
   */
  stopCalling(reason: string): void;
  /** Calls refused since `stopCalling`. */
  refusedCalls(): number;
}

/** Default blocking wait: Consul's own default. */
export const DEFAULT_WAIT_MS = 5 * 60_000;
const PLAIN_TIMEOUT_MS = 60_000;

/**
 * Creates the transport: one socket pool shared by the package's clients (one per namespace, the
 * namespace being a client-wide header) and the raw GETs. The token is not part of the pool: it
 * travels with each call, so rotating it needs no new sockets.
 */
export function createConsulTransport(conn: ConsulConnection, metrics: Metrics = noMetrics, reach?: ReachabilityTracker): ConsulTransport {
  const secure = conn.scheme === "https";
  const agent = createSocketPool(secure, conn.transport);
  const tls = secure ? httpsOptions(conn) : {};
  // Basic auth (consul.auth) is the same on every call: a client-wide header.
  const authorization = basicAuthHeader(conn.auth);
  let token = conn.token;
  const clients = new Map<string, PackageClient>();
  // Raw GET targets, one per namespace, their headers carrying the token: rebuilt after a rotation
  // (a query in flight keeps the target it was sent with).
  let targets = new Map<string, RawGetTarget>();

  const clientFor = (namespace: string | undefined): PackageClient => {
    const key = namespace ?? "";
    let client = clients.get(key);
    if (!client) {
      client = openPackageClient({ baseUrl: `${conn.url}/v1`, agent, tls, ...(namespace ? { namespace } : {}), ...(authorization ? { authorization } : {}) });
      clients.set(key, client);
    }
    return client;
  };
  const targetFor = (namespace: string | undefined): RawGetTarget => {
    const key = namespace ?? "";
    let target = targets.get(key);
    if (!target) {
      const headers: Record<string, string> = {};
      if (token) headers["x-consul-token"] = token;
      if (authorization) headers.authorization = authorization;
      if (namespace) headers["x-consul-namespace"] = namespace;
      target = { secure, host: conn.host, port: conn.port, agent, tls, headers };
      targets.set(key, target);
    }
    return target;
  };

  let stopping: string | undefined;
  let refused = 0;
  const refuse = (what: string): CtsError => {
    refused++;
    return new CtsError("CONSUL_UNREACHABLE", "external", `not ${what}: ${stopping}.`);
  };

  return {
    url: () => conn.url,
    async call(desc, scope, opts, run, mapError = toConsulError) {
      const { signal } = opts;
      if (signal?.aborted) throw abortError(signal);
      if (stopping !== undefined) throw refuse(desc.what);
      const { blocking, timeout, params } = exchange(opts, scope);
      // papi cancels through an EventEmitter; `includeResponse` gives us the headers (X-Consul-Index).
      const ctx = Object.assign(new EventEmitter(), { includeResponse: true as const, canceled: false });
      // A listener object, not a named closure (see raw-get.ts on what those cost per query).
      const onAbort = {
        handleEvent(): void {
          ctx.canceled = true;
          ctx.emit("cancel");
        },
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      const common: CommonCallOptions = { ctx, timeout, ...(token ? { token } : {}), ...params };
      const started = performance.now();
      const sent = reach?.sent();
      let ok = false;
      try {
        const [res, body] = await run(clientFor(scope.namespace), common);
        ok = true;
        reach?.answered(opts.answeredBy ? opts.answeredBy(body) : "servers", sent);
        return toReply(res, body);
      } catch (err) {
        if (signal?.aborted) throw abortError(signal);
        // Reachability is judged on Consul's own error mapping (a caller's mapper words it its way).
        const consulError = toConsulError(err, { ...desc, url: conn.url });
        reach?.failed(consulError, sent, opts.answeredBy ? "agent" : "servers");
        throw mapError === toConsulError ? consulError : mapError(err, { ...desc, url: conn.url });
      } finally {
        signal?.removeEventListener("abort", onAbort);
        // A call we cancelled (stop, a closed view) says nothing about Consul.
        if (!signal?.aborted) metrics.consulRequest({ ok, blocking, seconds: (performance.now() - started) / 1000 });
      }
    },
    get(describe, scope, opts, path, query = {}) {
      const { signal } = opts;
      if (signal?.aborted) return Promise.reject(abortError(signal));
      if (stopping !== undefined) return Promise.reject(refuse(describe().what));
      const { blocking, timeout, params } = exchange(opts, scope);
      // A URLSearchParams query may repeat a parameter (`node-meta`); the scope's are added to it.
      const search = (query instanceof URLSearchParams ? withParams(query, params) : new URLSearchParams({ ...query, ...params })).toString();
      const started = performance.now();
      const sent = reach?.sent();
      // No async frame: a waiting query holds this one step, not a suspended function per layer.
      return rawGet(targetFor(scope.namespace), search ? `/v1${path}?${search}` : `/v1${path}`, timeout, signal).then(
        ([res, body]) => {
          metrics.consulRequest({ ok: true, blocking, seconds: (performance.now() - started) / 1000 });
          reach?.answered("servers", sent);
          return toReply(res, body);
        },
        (err: unknown) => {
          // A call we cancelled (stop, a closed view) says nothing about Consul.
          if (signal?.aborted) throw abortError(signal);
          metrics.consulRequest({ ok: false, blocking, seconds: (performance.now() - started) / 1000 });
          const consulError = toConsulError(err, { ...describe(), url: conn.url });
          reach?.failed(consulError, sent);
          throw consulError;
        },
      );
    },
    setToken(next) {
      token = next;
      targets = new Map();
    },
    close() {
      agent.destroy();
      clients.clear();
      targets.clear();
    },
    stopCalling(reason) {
      if (stopping !== undefined) return;
      stopping = reason;
      // In-flight calls (a blocking read, a renewal, a KV write) fail now instead of at their timeout.
      agent.destroy();
    },
    refusedCalls: () => refused,
  };
}

/**
 * What one exchange sends and how long it may take: blocking options and scope as Consul's query
 * parameters (papi takes the same names), and the time limit.
 */
function exchange(opts: CallOptions, scope: ConsulScope): { blocking: boolean; timeout: number; params: Record<string, string> } {
  const blocking = opts.index !== undefined && opts.index > 0n;
  const wait = opts.wait ?? DEFAULT_WAIT_MS;
  const params: Record<string, string> = {};
  if (blocking) {
    params.index = String(opts.index);
    params.wait = `${Math.max(1, Math.round(wait))}ms`;
  }
  if (scope.datacenter) params.dc = scope.datacenter;
  if (scope.partition) params.partition = scope.partition;
  // Consul adds up to wait/16 of jitter; past that plus a margin the connection is dead.
  return { blocking, timeout: blocking ? wait + wait / 16 + 15_000 : (opts.timeoutMs ?? PLAIN_TIMEOUT_MS), params };
}

/** A copy of `query` with `params` set. */
function withParams(query: URLSearchParams, params: Record<string, string>): URLSearchParams {
  const out = new URLSearchParams(query);
  for (const [k, v] of Object.entries(params)) out.set(k, v);
  return out;
}

/** An answer's body with X-Consul-Index, the status and the ACL-filtered flag. */
function toReply<T>(res: { headers: Record<string, string | string[] | undefined>; statusCode?: number | undefined }, body: T | undefined): Reply<T> {
  return {
    data: body,
    index: parseIndex(res.headers["x-consul-index"]),
    status: res.statusCode ?? 0,
    filtered: res.headers["x-consul-results-filtered-by-acls"] === "true",
  };
}

/** The HTTP status of a failed call, when Consul answered at all. */
export function statusOf(err: unknown): number | undefined {
  const status = (err as { response?: { statusCode?: unknown } } | undefined)?.response?.statusCode;
  return typeof status === "number" ? status : undefined;
}

/** Consul's error body of a failed call as one trimmed string ("" when there is none). */
export function replyOf(err: unknown): string {
  const body = (err as { response?: { body?: unknown } } | undefined)?.response?.body;
  const text = Buffer.isBuffer(body) ? body.toString("utf8") : typeof body === "string" ? body : body === undefined || body === null ? "" : JSON.stringify(body);
  return text.trim().slice(0, 300);
}

function parseIndex(header: string | string[] | undefined): bigint {
  const raw = Array.isArray(header) ? header[0] : header;
  if (!raw) return 0n;
  try {
    return BigInt(raw);
  } catch {
    return 0n;
  }
}
