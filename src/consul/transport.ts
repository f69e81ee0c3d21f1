import { EventEmitter } from "node:events";
import { Agent as HttpAgent } from "node:http";
import { Agent as HttpsAgent } from "node:https";
import type { CtsError } from "../errors.ts";
import { noMetrics, type Metrics } from "../metrics/metrics.ts";
import { abortError, toConsulError, type CallDescription } from "./api-error.ts";
import { httpsOptions, type ConsulConnection } from "./connection.ts";
import { openPackageClient, type Answer, type CommonCallOptions, type PackageClient } from "./package.ts";
import { rawGet, type RawGetTarget } from "./raw-get.ts";

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

/** The one way cts reaches Consul: the `consul` package's clients, one socket pool, one TLS builder. */
export interface ConsulTransport {
  /** Runs one package call with the scope, blocking options and cancellation applied. */
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
  get(describe: () => Omit<CallDescription, "url">, scope: ConsulScope, opts: CallOptions, path: string, query?: Record<string, string>): Promise<Reply<Buffer>>;
  /** Consul's URL for messages (never carries the token). */
  url(): string;
  /** Sends every later call with this connection (a rotated token); calls in flight finish on the old one. */
  setConnection(conn: ConsulConnection): void;
  /** Closes pooled sockets. */
  close(): void;
}

/** Default blocking wait: Consul's own default. */
export const DEFAULT_WAIT_MS = 5 * 60_000;
const PLAIN_TIMEOUT_MS = 60_000;

/** One connection's clients (one per namespace) over one keep-alive socket pool. */
interface Pool {
  conn: ConsulConnection;
  agent: HttpAgent | HttpsAgent;
  tls: Record<string, unknown>;
  clients: Map<string, PackageClient>;
  /** Raw GET targets, one per namespace (their headers carry the token and namespace). */
  targets: Map<string, RawGetTarget>;
}

function openPool(conn: ConsulConnection): Pool {
  const secure = conn.scheme === "https";
  return {
    conn,
    agent: secure ? new HttpsAgent({ keepAlive: true }) : new HttpAgent({ keepAlive: true }),
    tls: secure ? httpsOptions(conn) : {},
    clients: new Map(),
    targets: new Map(),
  };
}

function targetFor(p: Pool, namespace: string | undefined): RawGetTarget {
  const key = namespace ?? "";
  let target = p.targets.get(key);
  if (!target) {
    const headers: Record<string, string> = {};
    if (p.conn.token) headers["x-consul-token"] = p.conn.token;
    if (namespace) headers["x-consul-namespace"] = namespace;
    target = { secure: p.conn.scheme === "https", host: p.conn.host, port: p.conn.port, agent: p.agent, tls: p.tls, headers };
    p.targets.set(key, target);
  }
  return target;
}

/**
 * Creates the transport. After `setConnection`, the old sockets are closed once blocking queries
 * already waiting on them must have ended (`drainMs`, past Consul's 10 min cap on `wait` plus jitter
 * would be excessive: cts never waits more than 5 min).
 */
export function createConsulTransport(connection: ConsulConnection, drainMs = 6 * 60_000, metrics: Metrics = noMetrics): ConsulTransport {
  let pool = openPool(connection);
  const retired = new Map<ReturnType<typeof setTimeout>, Pool>();

  // The package ignores `ns`, so a namespace travels as the X-Consul-Namespace header of a client
  // made for it; all clients of one connection share its socket pool.
  const clientFor = (p: Pool, namespace: string | undefined): PackageClient => {
    const key = namespace ?? "";
    let client = p.clients.get(key);
    if (!client) {
      client = openPackageClient({
        baseUrl: `${p.conn.url}/v1`,
        agent: p.agent,
        tls: p.tls,
        ...(p.conn.token ? { token: p.conn.token } : {}),
        ...(namespace ? { namespace } : {}),
      });
      p.clients.set(key, client);
    }
    return client;
  };

  return {
    url: () => pool.conn.url,
    async call(desc, scope, opts, run, mapError = toConsulError) {
      const { signal } = opts;
      if (signal?.aborted) throw abortError(signal);
      const p = pool;
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
      const common: CommonCallOptions = { ctx, timeout, ...params };
      const started = performance.now();
      let ok = false;
      try {
        const [res, body] = await run(clientFor(p, scope.namespace), common);
        ok = true;
        return toReply(res, body);
      } catch (err) {
        if (signal?.aborted) throw abortError(signal);
        throw mapError(err, { ...desc, url: p.conn.url });
      } finally {
        signal?.removeEventListener("abort", onAbort);
        // A call we cancelled (stop, a closed view) says nothing about Consul.
        if (!signal?.aborted) metrics.consulRequest({ ok, blocking, seconds: (performance.now() - started) / 1000 });
      }
    },
    get(describe, scope, opts, path, query = {}) {
      const { signal } = opts;
      if (signal?.aborted) return Promise.reject(abortError(signal));
      const p = pool;
      const { blocking, timeout, params } = exchange(opts, scope);
      const search = new URLSearchParams({ ...query, ...params }).toString();
      const started = performance.now();
      // No async frame: a waiting query holds this one step, not a suspended function per layer.
      return rawGet(targetFor(p, scope.namespace), search ? `/v1${path}?${search}` : `/v1${path}`, timeout, signal).then(
        ([res, body]) => {
          metrics.consulRequest({ ok: true, blocking, seconds: (performance.now() - started) / 1000 });
          return toReply(res, body);
        },
        (err: unknown) => {
          // A call we cancelled (stop, a closed view) says nothing about Consul.
          if (signal?.aborted) throw abortError(signal);
          metrics.consulRequest({ ok: false, blocking, seconds: (performance.now() - started) / 1000 });
          throw toConsulError(err, { ...describe(), url: p.conn.url });
        },
      );
    },
    setConnection(next) {
      const old = pool;
      pool = openPool(next);
      const t = setTimeout(() => {
        retired.delete(t);
        old.agent.destroy();
      }, drainMs);
      t.unref();
      retired.set(t, old);
    },
    close() {
      for (const [t, old] of retired) {
        clearTimeout(t);
        old.agent.destroy();
      }
      retired.clear();
      pool.agent.destroy();
      pool.clients.clear();
    },
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
