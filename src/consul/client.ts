import { createHash } from "node:crypto";
import { CtsError } from "../errors/cts-error.ts";
import { quote } from "../values/quote.ts";
import { redactSecret, type Logger } from "../log/logger.ts";
import type { Metrics } from "../metrics/metrics.ts";
import { consulEnvForTerraform, resolveConsulConnection, type ConsulConnection, type ConsulConnectionConfig } from "./connection.ts";
import { refusedServiceName, type CallDescription } from "./api-error.ts";
import { createReachabilityTracker, type ConsulReachability } from "./reachability.ts";
import { watchTokenFile } from "./token-file.ts";
import { gatedTransport, type ConsulTokenSource } from "./token-source.ts";
import { createConsulTransport, type CallOptions, type ConsulScope, type ConsulTransport } from "./transport.ts";
import { jsonReads, type CatalogNodesRequest, type ConfigEntriesRequest, type IntentionsRequest, type RawConfigEntry, type RawIntention, type RawNode } from "./json-reads.ts";

export type { CatalogNodesRequest, ConfigEntriesRequest, IntentionsRequest, RawConfigEntry, RawIntention, RawNode } from "./json-reads.ts";

export { DEFAULT_WAIT_MS } from "./transport.ts";

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
    /** The peer an imported instance came from. */
    PeerName?: string;
    Partition?: string;
  };
  Checks?: { CheckID: string; Status: string; ServiceID?: string }[] | null;
}

/** One KV pair, its value already decoded from base64 to UTF-8 (null for a key without a value). */
export interface KvEntry {
  Key: string;
  Value: string | null;
}

/** Blocking-query options every call takes. */
export type QueryOptions = Pick<CallOptions, "index" | "wait" | "signal">;

/** A Consul answer and its X-Consul-Index. */
export interface QueryResult<T> {
  data: T;
  index: bigint;
  /** Consul left out entries the token may not read (X-Consul-Results-Filtered-By-ACLs). */
  filtered?: boolean;
}

/** Options of a health query for the watch: the raw answer is digested and compared first. */
export interface HealthQueryOptions extends QueryOptions {
  /** Digest the answer's body (sha256, base64) into `bodyDigest`. */
  digestBody?: boolean;
  /** The body digest the caller already holds: an answer with it is not parsed (`unchanged`). */
  sameAs?: string;
}

/** A health answer; with `unchanged`, `data` is empty and the caller's data still holds. */
export interface HealthQueryResult extends QueryResult<HealthEntry[]> {
  bodyDigest?: string;
  unchanged?: boolean;
}

/** Parameters of a health query. */
export interface HealthServiceRequest {
  service: string;
  /** Only instances whose checks all pass (`?passing`). */
  passing?: boolean;
  filter?: string;
  datacenter?: string;
  namespace?: string;
  partition?: string;
  /** The cluster peer whose imported instances to read (`?peer=`). */
  peer?: string;
  /** The sameness group whose members' instances to read (`?sameness-group=`, Enterprise). */
  samenessGroup?: string;
}

/** Parameters of a catalog-services query. */
export interface CatalogServicesRequest {
  datacenter?: string;
  namespace?: string;
  partition?: string;
  nodeMeta?: Record<string, string>;
}

/** Parameters of a KV query. */
export interface KvRequest {
  path: string;
  recurse?: boolean;
  datacenter?: string;
  namespace?: string;
  partition?: string;
}

/** The few Consul HTTP calls cts makes. Errors are CtsErrors with `detail.status` for HTTP answers. */
export interface ConsulApi {
  /** `GET /v1/health/service/<name>`. */
  healthService(req: HealthServiceRequest, opts?: HealthQueryOptions): Promise<HealthQueryResult>;
  /** `GET /v1/catalog/services`: service name → tags. */
  catalogServices(req: CatalogServicesRequest, opts?: QueryOptions): Promise<QueryResult<Record<string, string[] | null>>>;
  /** `GET /v1/kv/<path>[?recurse]`; a missing key is an empty list, not an error. */
  kv(req: KvRequest, opts?: QueryOptions): Promise<QueryResult<KvEntry[]>>;
  /** `GET /v1/catalog/nodes` (filter, node meta). */
  catalogNodes(req: CatalogNodesRequest, opts?: QueryOptions): Promise<QueryResult<RawNode[]>>;
  /** `GET /v1/connect/intentions`, or `/v1/connect/intentions/match?by=destination` for one destination. */
  intentions(req: IntentionsRequest, opts?: QueryOptions): Promise<QueryResult<RawIntention[]>>;
  /** `GET /v1/config/<kind>[/<name>]`; a missing entry is an empty list, not an error. */
  configEntries(req: ConfigEntriesRequest, opts?: QueryOptions): Promise<QueryResult<RawConfigEntry[]>>;
  /** Closes pooled sockets. */
  close(): void;
}

/**
 * The one Consul client of a process: one connection (its token followed from a token file, and
 * Terraform's environment with it), TLS, namespaces and one keep-alive socket pool, on one HTTP
 * stack (transport.ts). The daemon builds it once (src/config/consul-connection.ts,
 * `consulClientFor`) and passes it to the watch, high availability, shared mode, the
 * self-registration, the API's health probe and doctor.
 */
export interface ConsulClient extends ConsulApi {
  /**
   * Any other call (KV writes, locks, sessions, transactions, the agent) through the `consul`
   * package's public API, on the same sockets, token and TLS; errors are `mapError`'s (default
   * toConsulError).
   */
  call: ConsulTransport["call"];
  /** The connection every new call uses (a rotated token replaces it). Never log it whole. */
  connection(): ConsulConnection;
  /**
   * The environment Terraform needs to reach the same Consul (consulEnvForTerraform): one object,
   * updated in place when the token rotates, so a driver holding it passes the new token on.
   */
  readonly terraformEnv: Record<string, string>;
  /** Sends every later call with this token (what the token file's watch calls); calls in flight finish with the old one. */
  rotateToken(token: string): void;
  /**
   * Tells `listener` when the token changed (a token file or a Vault secret rotated): a blocking
   * read sent with the old token is still waiting with it, and fails once the old token is deleted;
   * the watch sends its reads again (src/daemon/compose.ts). Returns the unsubscribe.
   */
  onTokenChange(listener: () => void): () => void;
  /** Consul's URL for messages (never carries the token). */
  url(): string;
  /** Whether Consul answers, as this client's calls saw it (lost/back lines are logged here). */
  readonly reachability: ConsulReachability;
  /** Stops following the token file and closes the pooled sockets. */
  close(): void;
  /** Stopping while Consul is unreachable: no later call is made, calls in flight fail now (transport.ts). */
  stopCalling(reason: string): void;
  /** Calls refused since `stopCalling`. */
  refusedCalls(): number;
}

/** How the client is built. */
export interface ConsulClientOptions {
  /** A token file to follow (consul.tokenFile / CONSUL_HTTP_TOKEN_FILE): a changed token is used from the next call on. */
  tokenFile?: string;
  /** Where every request is counted. */
  metrics?: Metrics;
  /** A token kept somewhere else (a Vault secret): used instead of the connection's; closed with the client. */
  tokenSource?: ConsulTokenSource;
  /** Told when the token file's token changed. */
  log?: Logger;
}

/** Creates a Consul client (a config is resolved with Consul's environment variables as fallbacks). */
export function createConsulClient(connection: ConsulConnection | ConsulConnectionConfig = {}, options: ConsulClientOptions = {}): ConsulClient {
  let conn = "scheme" in connection ? (connection as ConsulConnection) : resolveConsulConnection(connection);
  const reachability = createReachabilityTracker(() => conn.url, options.log);
  const direct = createConsulTransport(conn, options.metrics, reachability);
  const terraformEnv = consulEnvForTerraform(conn);
  const scopeOf = (r: ConsulScope): ConsulScope => ({
    ...(r.datacenter ? { datacenter: r.datacenter } : {}),
    ...(r.namespace ? { namespace: r.namespace } : {}),
    ...(r.partition ? { partition: r.partition } : {}),
  });
  const tokenListeners = new Set<() => void>();
  const rotateToken = (token: string): void => {
    redactSecret(token);
    const changed = conn.token !== undefined && conn.token !== token;
    conn = { ...conn, token };
    direct.setToken(token);
    for (const k of Object.keys(terraformEnv)) delete terraformEnv[k];
    Object.assign(terraformEnv, consulEnvForTerraform(conn));
    if (changed) for (const l of tokenListeners) l();
  };
  // A token from elsewhere (Vault): the first call waits for it, a new value is used from the next call on.
  const source = options.tokenSource;
  const transport = source ? gatedTransport(direct, source, rotateToken) : direct;
  const stopFollowing = source?.follow((token) => {
    if (token === conn.token) return;
    rotateToken(token);
    options.log?.info(`consul: the token in ${source.origin} changed; using the new one`);
  });
  const file = options.tokenFile;
  const stopTokenWatch = file
    ? watchTokenFile(file, conn.token ?? "", (token) => {
        rotateToken(token);
        options.log?.info(`consul: the token in ${file} changed; using the new one`);
      })
    : undefined;
  // Whether Consul enforces ACLs on calls without a token: asked once, when an empty answer to a
  // call without a token needs it (a failed probe is asked again next time).
  let aclsOn: Promise<boolean> | undefined;
  const anonymousCheck = async (describe: () => Omit<CallDescription, "url">): Promise<void> => {
    aclsOn ??= transport
      .get(() => ({ what: "checking whether Consul enforces ACLs", permission: "none" }), {}, {}, "/acl/token/self")
      .then(
        () => false,
        (err: unknown) => {
          if (err instanceof CtsError && typeof err.detail.status === "number") return err.detail.status === 403;
          aclsOn = undefined;
          throw err;
        },
      );
    if (!(await aclsOn)) return;
    const desc = describe();
    throw new CtsError(
      "CONSUL_PERMISSION_DENIED",
      "external",
      `Consul enforces ACLs and cts sends no token: its empty answer to ${desc.what} cannot be told from one the ACLs emptied, so it is not used. Set consul.token (or CONSUL_HTTP_TOKEN, or consul.tokenFile) to a token with ${desc.permission} (see examples/acl/cts-policy.hcl).`,
      { detail: { status: 403, anonymous: true } },
    );
  };
  return {
    terraformEnv,
    reachability,
    connection: () => conn,
    rotateToken,
    onTokenChange(listener) {
      tokenListeners.add(listener);
      return () => tokenListeners.delete(listener);
    },
    url: () => transport.url(),
    call: (desc, scope, opts, run, mapError) => transport.call(desc, scope, opts, run, mapError),
    healthService(req, opts = {}) {
      // Not async, and the call's wording built only for an error: thousands of these wait at once.
      // The name is quoted: a catalog name holding a newline must not forge a log line.
      const describe = () => ({ what: `reading the health of service ${quote(req.service)}`, permission: `service:read on ${quote(req.service)} (and node:read)` });
      const query: Record<string, string> = {};
      if (req.passing) query.passing = "true";
      if (req.filter) query.filter = req.filter;
      if (req.peer) query.peer = req.peer;
      if (req.samenessGroup) query["sameness-group"] = req.samenessGroup;
      let path: string;
      try {
        path = `/health/service/${encodeURIComponent(req.service)}`;
      } catch (err) {
        // A name with a lone surrogate (URIError): rejected like any failed call.
        return Promise.reject(err);
      }
      return transport.get(describe, scopeOf(req), opts, path, query).then((r) => {
        // Consul hides what a token may not read instead of refusing: a partial list of instances
        // would make Terraform remove live ones, so this is a permission error, not data.
        if (r.filtered) {
          const desc = describe();
          throw new CtsError(
            "CONSUL_PERMISSION_DENIED",
            "external",
            `Consul filtered instances of service ${quote(req.service)} by ACLs: the token lacks ${desc.permission}. Grant service:read on ${quote(req.service)} and node:read on its nodes (see examples/acl/cts-policy.hcl).`,
            { detail: { status: 403, filteredByAcls: true } },
          );
        }
        const body = r.data ?? Buffer.alloc(0);
        // Without a token Consul never says it filtered (it hides that from anonymous callers): an
        // empty answer is then checked against whether ACLs are on.
        if (isEmptyList(body) && !conn.token) return anonymousCheck(describe).then(() => parseHealth(r.index, body, opts, describe, transport.url()));
        return parseHealth(r.index, body, opts, describe, transport.url());
      }, (err: unknown) => {
        throw refusedServiceName(err, req.service) ?? err;
      });
    },
    async catalogServices(req, opts = {}) {
      const desc = { what: "listing the catalog's services", permission: "service:read on the services to watch" };
      const nodeMeta = Object.entries(req.nodeMeta ?? {})
        .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
        .map(([k, v]) => `${k}:${v}`);
      const r = await transport.call(desc, scopeOf(req), opts, (c, common) =>
        c.catalog.service.list({ ...(nodeMeta.length ? { "node-meta": nodeMeta } : {}), ...common }),
      );
      // A catalog the ACLs shortened would drop services (and their resources) as if deregistered.
      if (r.filtered) {
        throw new CtsError(
          "CONSUL_PERMISSION_DENIED",
          "external",
          `Consul filtered the catalog's services by ACLs: the token lacks service:read on some of them. Grant service:read on every service the task watches (a service_prefix rule; see examples/acl/cts-policy.hcl), or set the right token in consul.token / CONSUL_HTTP_TOKEN.`,
          { detail: { status: 403, filteredByAcls: true } },
        );
      }
      if (!conn.token && (r.data === undefined || r.data === null || Object.keys(r.data).length === 0)) await anonymousCheck(() => desc);
      return { data: r.data ?? {}, index: r.index };
    },
    async kv(req, opts = {}) {
      const key = req.path.replace(/^\/+/, "");
      const desc = { what: `reading Consul KV '${key}'${req.recurse ? " recursively" : ""}`, permission: `key:read on "${key}"${req.recurse ? " (as a prefix)" : ""}` };
      const r = await transport.call(desc, scopeOf(req), opts, (c, common) => c.kv.get({ key, ...(req.recurse ? { recurse: true } : {}), ...common }));
      const list = r.data === undefined || r.data === null ? [] : Array.isArray(r.data) ? r.data : [r.data];
      return { data: list.map((e) => ({ Key: e.Key, Value: e.Value ?? null })), index: r.index };
    },
    ...jsonReads(transport, scopeOf, (describe) => (conn.token ? Promise.resolve() : anonymousCheck(describe))),
    close() {
      stopTokenWatch?.();
      stopFollowing?.();
      source?.close();
      transport.close();
    },
    stopCalling: (reason) => transport.stopCalling(reason),
    refusedCalls: () => transport.refusedCalls(),
  };
}

/** True for a JSON body that holds no entries (`[]`, `null` or nothing). */
function isEmptyList(body: Buffer): boolean {
  if (body.length > 16) return false;
  const text = body.toString("utf8").trim();
  return text === "" || text === "[]" || text === "null";
}

/** A health answer's body parsed (or found `unchanged` against `opts.sameAs`). */
function parseHealth(index: bigint, body: Buffer, opts: HealthQueryOptions, describe: () => { what: string }, url: string): HealthQueryResult {
  const bodyDigest = opts.digestBody || opts.sameAs !== undefined ? createHash("sha256").update(body).digest("base64") : undefined;
  if (bodyDigest !== undefined && bodyDigest === opts.sameAs) return { data: [], index, bodyDigest, unchanged: true };
  let data: HealthEntry[] | null = [];
  try {
    if (body.length > 0) data = JSON.parse(body.toString("utf8")) as HealthEntry[] | null;
  } catch (cause) {
    throw new CtsError("CONSUL_HTTP_ERROR", "external", `Consul's answer to ${describe().what} is not JSON (${(cause as Error).message}). cts will retry; check what listens at ${url}.`, { cause });
  }
  return { data: data ?? [], index, ...(bodyDigest !== undefined ? { bodyDigest } : {}) };
}
