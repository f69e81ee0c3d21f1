import { EventEmitter } from "node:events";
import { readFileSync } from "node:fs";
import { Agent as HttpAgent } from "node:http";
import { Agent as HttpsAgent } from "node:https";
import Consul from "consul";
import { CtsError } from "../errors.ts";
import { abortError, toConsulError, type CallDescription } from "./api-error.ts";
import { resolveConsulConnection, type ConsulConnection, type ConsulConnectionConfig } from "./connection.ts";

/** One entry of `/v1/health/service/<name>`, as Consul sends it (the fields cts reads). */
export interface HealthEntry {
  Node: {
    ID?: string;
    Node: string;
    Address: string;
    Datacenter?: string;
    TaggedAddresses?: Record<string, string> | null;
    Meta?: Record<string, string> | null;
  };
  Service: {
    ID: string;
    Service: string;
    Kind?: string;
    Tags?: string[] | null;
    Address?: string;
    Meta?: Record<string, string> | null;
    Port?: number;
    Namespace?: string;
  };
  Checks?: { CheckID: string; Status: string; ServiceID?: string }[] | null;
}

/** One KV pair, its value already decoded from base64 to UTF-8 (null for a key without a value). */
export interface KvEntry {
  Key: string;
  Value: string | null;
}

/** Blocking-query options every call takes. */
export interface QueryOptions {
  /** Block until Consul's index passes this (0 or absent: answer at once). */
  index?: bigint;
  /** How long Consul may block, in ms (default 5 min; Consul caps it at 10 min). */
  wait?: number;
  /** Cancels the request (the socket is closed, the promise rejects with an AbortError). */
  signal?: AbortSignal;
}

/** A Consul answer and its X-Consul-Index. */
export interface QueryResult<T> {
  data: T;
  index: bigint;
  /** Consul left out entries the token may not read (X-Consul-Results-Filtered-By-ACLs). */
  filtered?: boolean;
}

/** Parameters of a health query. */
export interface HealthServiceRequest {
  service: string;
  /** Only instances whose checks all pass (`?passing`). */
  passing?: boolean;
  filter?: string;
  datacenter?: string;
  namespace?: string;
}

/** Parameters of a catalog-services query. */
export interface CatalogServicesRequest {
  datacenter?: string;
  namespace?: string;
  nodeMeta?: Record<string, string>;
}

/** Parameters of a KV query. */
export interface KvRequest {
  path: string;
  recurse?: boolean;
  datacenter?: string;
  namespace?: string;
}

/** The few Consul HTTP calls cts makes. Errors are CtsErrors with `detail.status` for HTTP answers. */
export interface ConsulApi {
  /** `GET /v1/health/service/<name>`. */
  healthService(req: HealthServiceRequest, opts?: QueryOptions): Promise<QueryResult<HealthEntry[]>>;
  /** `GET /v1/catalog/services`: service name → tags. */
  catalogServices(req: CatalogServicesRequest, opts?: QueryOptions): Promise<QueryResult<Record<string, string[] | null>>>;
  /** `GET /v1/kv/<path>[?recurse]`; a missing key is an empty list, not an error. */
  kv(req: KvRequest, opts?: QueryOptions): Promise<QueryResult<KvEntry[]>>;
  /** Closes pooled sockets. */
  close(): void;
}

/** Default blocking wait: Consul's own default. */
export const DEFAULT_WAIT_MS = 5 * 60_000;
/** Timeout of a non-blocking call. */
const PLAIN_TIMEOUT_MS = 60_000;

type ConsulClient = InstanceType<typeof Consul>;
type Call = (client: ConsulClient, common: Record<string, unknown>) => Promise<unknown>;

/** The real ConsulApi over the `consul` npm package (keep-alive sockets, AbortSignal cancellation). */
export function createConsulApi(connection: ConsulConnection | ConsulConnectionConfig = {}): ConsulApi {
  const conn = "scheme" in connection ? (connection as ConsulConnection) : resolveConsulConnection(connection);
  const secure = conn.scheme === "https";
  const agent = secure ? new HttpsAgent({ keepAlive: true }) : new HttpAgent({ keepAlive: true });
  const tlsOptions = secure ? readTls(conn) : {};
  const clients = new Map<string, ConsulClient>();

  // The consul package ignores `ns`, so a namespace travels as the X-Consul-Namespace header of
  // a client made for it; all clients share one socket pool.
  const clientFor = (namespace: string | undefined): ConsulClient => {
    const key = namespace ?? "";
    let client = clients.get(key);
    if (!client) {
      const opts = {
        baseUrl: `${conn.url}/v1`,
        agent,
        ...tlsOptions,
        ...(namespace ? { headers: { "x-consul-namespace": namespace } } : {}),
        ...(conn.token ? { defaults: { token: conn.token } } : {}),
      };
      client = new Consul(opts as ConstructorParameters<typeof Consul>[0]);
      clients.set(key, client);
    }
    return client;
  };

  async function call<T>(desc: Omit<CallDescription, "url">, namespace: string | undefined, opts: QueryOptions, run: Call): Promise<QueryResult<T>> {
    const { signal } = opts;
    if (signal?.aborted) throw abortError(signal);
    const blocking = opts.index !== undefined && opts.index > 0n;
    const wait = opts.wait ?? DEFAULT_WAIT_MS;
    // papi cancels through an EventEmitter; `includeResponse` gives us the headers (X-Consul-Index).
    const ctx = Object.assign(new EventEmitter(), { includeResponse: true, canceled: false });
    const onAbort = () => {
      ctx.canceled = true;
      ctx.emit("cancel");
    };
    signal?.addEventListener("abort", onAbort, { once: true });
    const common: Record<string, unknown> = {
      ctx,
      // Consul adds up to wait/16 of jitter; past that plus a margin the connection is dead.
      timeout: blocking ? wait + wait / 16 + 15_000 : PLAIN_TIMEOUT_MS,
      ...(blocking ? { index: String(opts.index), wait: `${Math.max(1, Math.round(wait))}ms` } : {}),
    };
    try {
      const out = (await run(clientFor(namespace), common)) as [{ headers: Record<string, string | string[] | undefined> }, unknown];
      const [res, body] = out;
      const filtered = res.headers["x-consul-results-filtered-by-acls"] === "true";
      return { data: body as T, index: parseIndex(res.headers["x-consul-index"]), ...(filtered ? { filtered } : {}) };
    } catch (err) {
      if (signal?.aborted) throw abortError(signal);
      throw toConsulError(err, { ...desc, url: conn.url });
    } finally {
      signal?.removeEventListener("abort", onAbort);
    }
  }

  return {
    healthService(req, opts = {}) {
      const desc = { what: `reading the health of service '${req.service}'`, permission: `service:read on "${req.service}" (and node:read)` };
      return call<HealthEntry[] | undefined>(desc, req.namespace, opts, (c, common) =>
        c.health.service({
          service: req.service,
          ...(req.passing ? { passing: true } : {}),
          ...(req.filter ? { filter: req.filter } : {}),
          ...(req.datacenter ? { dc: req.datacenter } : {}),
          ...common,
        } as never),
      ).then((r) => {
        // Consul hides what a token may not read instead of refusing: a partial list of instances
        // would make Terraform remove live ones, so this is a permission error, not data.
        if (r.filtered)
          throw new CtsError(
            "CONSUL_PERMISSION_DENIED",
            "external",
            `Consul filtered instances of service '${req.service}' by ACLs: the token lacks ${desc.permission}. Grant service:read on "${req.service}" and node:read on its nodes (see examples/acl/cts-policy.hcl).`,
            { detail: { status: 403 } },
          );
        return { data: r.data ?? [], index: r.index };
      });
    },
    catalogServices(req, opts = {}) {
      const desc = { what: "listing the catalog's services", permission: "service:read on the services to watch" };
      const nodeMeta = Object.entries(req.nodeMeta ?? {})
        .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
        .map(([k, v]) => `${k}:${v}`);
      return call<Record<string, string[] | null> | undefined>(desc, req.namespace, opts, (c, common) =>
        c.catalog.service.list({
          ...(req.datacenter ? { dc: req.datacenter } : {}),
          ...(nodeMeta.length ? { "node-meta": nodeMeta } : {}),
          ...common,
        } as never),
      ).then((r) => ({ data: r.data ?? {}, index: r.index }));
    },
    kv(req, opts = {}) {
      const key = req.path.replace(/^\/+/, "");
      const desc = { what: `reading Consul KV '${key}'${req.recurse ? " recursively" : ""}`, permission: `key:read on "${key}"${req.recurse ? " (as a prefix)" : ""}` };
      return call<KvEntry | KvEntry[] | undefined>(desc, req.namespace, opts, (c, common) =>
        c.kv.get({
          key,
          ...(req.recurse ? { recurse: true } : {}),
          ...(req.datacenter ? { dc: req.datacenter } : {}),
          ...common,
        } as never),
      ).then((r) => ({
        data: (r.data === undefined || r.data === null ? [] : Array.isArray(r.data) ? r.data : [r.data]).map((e) => ({ Key: e.Key, Value: e.Value ?? null })),
        index: r.index,
      }));
    },
    close() {
      agent.destroy();
      clients.clear();
    },
  };
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

/** Reads the TLS files once, failing with the field to fix. */
function readTls(conn: ConsulConnection): Record<string, unknown> {
  const read = (file: string | undefined, field: string, env: string): Buffer | undefined => {
    if (!file) return undefined;
    try {
      return readFileSync(file);
    } catch (cause) {
      throw new CtsError("CONSUL_TLS_FILE", "usage", `Cannot read ${field} '${file}' (${(cause as NodeJS.ErrnoException).code ?? cause}). Fix consul.tls.${field} or ${env}.`, {
        cause,
        detail: { field: `consul.tls.${field}`, file },
      });
    }
  };
  const ca = read(conn.tls.caFile, "caFile", "CONSUL_CACERT");
  const cert = read(conn.tls.certFile, "certFile", "CONSUL_CLIENT_CERT");
  const key = read(conn.tls.keyFile, "keyFile", "CONSUL_CLIENT_KEY");
  return {
    ...(ca ? { ca } : {}),
    ...(cert ? { cert } : {}),
    ...(key ? { key } : {}),
    ...(conn.tls.serverName ? { servername: conn.tls.serverName } : {}),
    rejectUnauthorized: conn.tls.insecureSkipVerify !== true,
  };
}
