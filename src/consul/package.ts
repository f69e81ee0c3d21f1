import type { EventEmitter } from "node:events";
import type { IncomingMessage } from "node:http";
import type { Agent as HttpAgent } from "node:http";
import type { Agent as HttpsAgent } from "node:https";
import Consul from "consul";

/**
 * The slice of the `consul` npm package cts calls, typed as cts calls it. The package's own
 * typings do not know its papi request options (`ctx` for cancellation, `timeout`), that
 * `ctx.includeResponse` makes every method answer `[response, body]` (how we read
 * X-Consul-Index), nor the raw Consul shape transactions send, so this is the one declaration
 * of it; `openPackageClient` is the only place the package's class is cast to it.
 */

/** Options papi and the package accept on every call. */
export interface CommonCallOptions {
  /** papi's cancellation context; `includeResponse` adds the response to every answer. */
  ctx: EventEmitter & { includeResponse: true };
  /** Hard limit of the whole exchange, in ms. */
  timeout: number;
  /** Blocking query: answer once the index passes this. */
  index?: string;
  /** Blocking query: at most this long (Go duration). */
  wait?: string;
  dc?: string;
  partition?: string;
}

/** The HTTP response papi hands back with the body. */
export type PackageResponse = IncomingMessage & { body?: unknown };
/** What every method answers with `includeResponse`: the body is absent on a 404 KV read or an empty answer. */
export type Answer<T> = [PackageResponse, T?];

/** A KV entry as the package returns it (Value already base64-decoded to UTF-8). */
export interface RawKvEntry {
  Key: string;
  Value: string | null;
  Session?: string;
  ModifyIndex: number;
}

/** One operation of `/v1/txn`, in Consul's own shape (the package sends it as it is). */
export type TxnOperation = { KV: { Verb: string; Key: string; Value?: string; Session?: string } };

/** A request on papi's machinery (path relative to /v1), for what the package does not offer. */
export interface RawRequest extends Pick<CommonCallOptions, "ctx" | "timeout"> {
  name: string;
  path: string;
  params?: Record<string, string>;
  query?: Record<string, string>;
  type?: "json" | "text";
  body?: unknown;
}

/** papi's middleware signature (the package's `utils.body` etc.). */
type Middleware = (request: { err?: Error; res?: PackageResponse }, next: (err: unknown, value?: unknown, result?: unknown) => void) => void;

/** The `consul` package's client, as far as cts uses it. */
export interface PackageClient {
  health: {
    service(o: CommonCallOptions & { service: string; passing?: boolean; filter?: string; tag?: string }): Promise<Answer<unknown[]>>;
  };
  catalog: {
    service: { list(o: CommonCallOptions & { "node-meta"?: string[] }): Promise<Answer<Record<string, string[] | null>>> };
  };
  kv: {
    get(o: CommonCallOptions & { key: string; recurse?: boolean }): Promise<Answer<RawKvEntry | RawKvEntry[]>>;
    set(o: CommonCallOptions & { key: string; value: string; acquire?: string; release?: string }): Promise<Answer<boolean>>;
    del(o: CommonCallOptions & { key: string; recurse?: boolean }): Promise<Answer<boolean>>;
  };
  session: {
    renew(o: CommonCallOptions & { id: string }): Promise<Answer<unknown[] | null>>;
    destroy(o: CommonCallOptions & { id: string }): Promise<Answer<never>>;
  };
  transaction: { create(ops: TxnOperation[], o: CommonCallOptions): Promise<Answer<unknown>> };
  agent: {
    service: {
      register(o: CommonCallOptions & Record<string, unknown>): Promise<Answer<never>>;
      deregister(o: CommonCallOptions & { id: string }): Promise<Answer<never>>;
    };
  };
  status: { leader(o: CommonCallOptions): Promise<Answer<string>> };
  /** papi's PUT, for the calls the package lacks. */
  _put(req: RawRequest, ...middleware: Middleware[]): Promise<Answer<unknown>>;
  /** papi's GET, for the calls the package lacks. */
  _get(req: RawRequest, ...middleware: Middleware[]): Promise<Answer<unknown>>;
  /** papi's DELETE, for the calls the package lacks. */
  _delete(req: RawRequest, ...middleware: Middleware[]): Promise<Answer<unknown>>;
}

/** Options to construct a package client. */
export interface PackageClientOptions {
  /** `scheme://host:port/v1`. */
  baseUrl: string;
  agent: HttpAgent | HttpsAgent;
  /** node:https options (CA, client certificate, server name, verification). */
  tls: Record<string, unknown>;
  token?: string;
  /** Sent as X-Consul-Namespace (the package ignores an `ns` option). */
  namespace?: string;
}

/** Creates one package client; the only place the package's class meets our declaration. */
export function openPackageClient(o: PackageClientOptions): PackageClient {
  // Token and namespace go in papi's client-wide headers, so raw requests carry them too.
  const headers = { ...(o.token ? { "x-consul-token": o.token } : {}), ...(o.namespace ? { "x-consul-namespace": o.namespace } : {}) };
  const opts = { baseUrl: o.baseUrl, agent: o.agent, ...o.tls, headers };
  return new Consul(opts as ConstructorParameters<typeof Consul>[0]) as unknown as PackageClient;
}

/** papi middleware that resolves with `[response, body]` (the package's `utils.body` under includeResponse). */
export const withBody: Middleware = (request, next) => {
  if (request.err) {
    (request.err as Error & { response?: unknown }).response = request.res;
    return next(false, request.err);
  }
  next(false, undefined, [request.res, request.res?.body]);
};
