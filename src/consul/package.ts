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
 * of it; `openPackageClient` is the only place the package's class is cast to it. Only the
 * package's public methods are declared: papi's request internals (`_get`, `_put`, `_delete`…)
 * are not ours to call (test/unit/consul-client.test.ts looks for them in src/).
 */

/** Options papi and the package accept on every call. */
export interface CommonCallOptions {
  /** papi's cancellation context; `includeResponse` adds the response to every answer. */
  ctx: EventEmitter & { includeResponse: true };
  /** Hard limit of the whole exchange, in ms. */
  timeout: number;
  /** The ACL token (sent as X-Consul-Token): per call, so a rotated token needs no new client. */
  token?: string;
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
    /** `checks: []` sends Consul's `Checks: []`, which ties the session to no health check (not even serfHealth). */
    create(o: CommonCallOptions & { name: string; ttl: string; lockdelay?: string; behavior: "release" | "delete"; checks?: string[] }): Promise<Answer<{ ID: string }>>;
    renew(o: CommonCallOptions & { id: string }): Promise<Answer<unknown[] | null>>;
    destroy(o: CommonCallOptions & { id: string }): Promise<Answer<never>>;
    /** `GET /v1/session/list`: every live session (the identity check at start looks for one of its id). */
    list(o: CommonCallOptions): Promise<Answer<Array<{ ID: string; Name?: string; Node?: string; CreateIndex?: number }> | null>>;
  };
  transaction: { create(ops: TxnOperation[], o: CommonCallOptions): Promise<Answer<unknown>> };
  agent: {
    /** `GET /v1/agent/self`: the agent's configuration (resolves the token, so an unknown one is refused). */
    self(o: CommonCallOptions): Promise<Answer<unknown>>;
    service: {
      register(o: CommonCallOptions & Record<string, unknown>): Promise<Answer<never>>;
      /** `GET /v1/agent/services`: the agent's services by id. */
      list(o: CommonCallOptions): Promise<Answer<Record<string, { ID?: string; Service?: string; Address?: string; Port?: number }>>>;
      deregister(o: CommonCallOptions & { id: string }): Promise<Answer<never>>;
    };
  };
  status: { leader(o: CommonCallOptions): Promise<Answer<string>> };
}

/** Options to construct a package client. */
export interface PackageClientOptions {
  /** `scheme://host:port/v1`. */
  baseUrl: string;
  /** The one keep-alive socket pool of the process (the raw GETs of the watch use it too). */
  agent: HttpAgent | HttpsAgent;
  /** node:https options (CA, client certificate, server name, verification). */
  tls: Record<string, unknown>;
  /** Sent as X-Consul-Namespace on every call (the package ignores an `ns` option). */
  namespace?: string;
  /** Sent as Authorization on every call (HTTP basic auth, consul.auth). */
  authorization?: string;
}

/** Creates one package client; the only place the package's class meets our declaration. */
export function openPackageClient(o: PackageClientOptions): PackageClient {
  // The namespace goes in the client-wide headers (the package has no option for it); the token
  // goes with each call (the package's `token` option), so a rotated one reaches the next call.
  const headers: Record<string, string> = {};
  if (o.namespace) headers["x-consul-namespace"] = o.namespace;
  if (o.authorization) headers.authorization = o.authorization;
  const opts = { baseUrl: o.baseUrl, agent: o.agent, ...o.tls, headers };
  return new Consul(opts as ConstructorParameters<typeof Consul>[0]) as unknown as PackageClient;
}
