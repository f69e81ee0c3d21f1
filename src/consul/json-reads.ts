import { CtsError } from "../errors/cts-error.ts";
import { quote } from "../values/quote.ts";
import type { CallDescription } from "./api-error.ts";
import type { ConsulScope, ConsulTransport, Reply } from "./transport.ts";

/** Blocking-query options of a read (as client.ts's QueryOptions). */
type ReadOptions = { index?: bigint; wait?: number; signal?: AbortSignal };
/** A read's answer and its X-Consul-Index. */
type ReadResult<T> = { data: T; index: bigint };

/** Parameters of a catalog-nodes query. */
export interface CatalogNodesRequest {
  datacenter?: string;
  partition?: string;
  /** A Consul filter expression on nodes. */
  filter?: string;
  /** `?node-meta=k:v` for each pair. */
  nodeMeta?: Record<string, string>;
}

/** Parameters of an intentions query: one destination's intentions (in evaluation order), or all. */
export interface IntentionsRequest {
  destination?: string;
  datacenter?: string;
  namespace?: string;
  partition?: string;
}

/** Parameters of a config-entries query: every entry of a kind, or one by name. */
export interface ConfigEntriesRequest {
  kind: string;
  name?: string;
  datacenter?: string;
  namespace?: string;
  partition?: string;
}

/** A node as `/v1/catalog/nodes` sends it (the fields cts reads). */
export interface RawNode {
  ID?: string;
  Node: string;
  Address?: string;
  Datacenter?: string;
  Partition?: string;
  TaggedAddresses?: Record<string, string> | null;
  Meta?: Record<string, string> | null;
}

/** An intention as `/v1/connect/intentions` sends it (the fields cts reads). */
export interface RawIntention {
  SourceName?: string;
  SourceNS?: string;
  SourcePartition?: string;
  SourcePeer?: string;
  SourceSamenessGroup?: string;
  SourceType?: string;
  DestinationName?: string;
  DestinationNS?: string;
  DestinationPartition?: string;
  Action?: string;
  Permissions?: Array<Record<string, unknown>> | null;
  Precedence?: number;
  Description?: string;
  Meta?: Record<string, string> | null;
}

/** A config entry as Consul sends it. */
export type RawConfigEntry = { Kind: string; Name: string } & Record<string, unknown>;

/**
 * The reads answered with a JSON list that the watch's newer sources make: catalog nodes,
 * intentions and config entries. Each is one raw GET on the client's transport (its token, TLS,
 * scope and blocking options), so they block, cancel and count as every other read does.
 * `emptyCheck` is the client's check of an empty answer to a call without a token (ACLs may have
 * emptied it).
 */
export function jsonReads(
  transport: ConsulTransport,
  scopeOf: (r: ConsulScope) => ConsulScope,
  emptyCheck: (describe: () => Omit<CallDescription, "url">) => Promise<void>,
) {
  /** One GET whose body is JSON; `filteredMessage` words a list the ACLs shortened. */
  async function getJson<T>(describe: () => Omit<CallDescription, "url">, scope: ConsulScope, opts: ReadOptions, path: string, query: Record<string, string> | URLSearchParams, filteredMessage: string): Promise<Reply<T>> {
    const reply = await transport.get(describe, scopeOf(scope), opts, path, query);
    // A list the ACLs shortened would drop data (and the resources built from it) as if it were gone.
    if (reply.filtered) throw new CtsError("CONSUL_PERMISSION_DENIED", "external", filteredMessage, { detail: { status: 403, filteredByAcls: true } });
    const body = reply.data ?? Buffer.alloc(0);
    let data: T | undefined;
    try {
      data = body.length ? (JSON.parse(body.toString("utf8")) as T) : undefined;
    } catch (cause) {
      throw new CtsError("CONSUL_HTTP_ERROR", "external", `Consul's answer to ${describe().what} is not JSON (${(cause as Error).message}). cts will retry; check what listens at ${transport.url()}.`, { cause });
    }
    return { ...reply, data };
  }

  return {
    async catalogNodes(req: CatalogNodesRequest, opts: ReadOptions = {}): Promise<ReadResult<RawNode[]>> {
      const describe = () => ({ what: "listing the catalog's nodes", permission: 'node:read on the nodes to watch (node_prefix "")' });
      const query = new URLSearchParams();
      if (req.filter) query.append("filter", req.filter);
      for (const [k, v] of Object.entries(req.nodeMeta ?? {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) query.append("node-meta", `${k}:${v}`);
      const r = await getJson<RawNode[] | null>(describe, req, opts, "/catalog/nodes", query, "Consul filtered the catalog's nodes by ACLs: the token lacks node:read on some of them. Grant node:read on every node the task watches (a node_prefix rule; see examples/acl/cts-policy.hcl).");
      const data = Array.isArray(r.data) ? r.data : [];
      if (data.length === 0) await emptyCheck(describe);
      return { data, index: r.index };
    },

    async intentions(req: IntentionsRequest, opts: ReadOptions = {}): Promise<ReadResult<RawIntention[]>> {
      const one = req.destination !== undefined;
      const describe = () => ({
        what: one ? `reading the intentions of destination ${quote(req.destination!)}` : "listing the service intentions",
        permission: one ? `intentions:read on ${quote(req.destination!)} (service ${quote(req.destination!)} { intentions = "read" })` : 'intentions:read on every destination (service_prefix "" { intentions = "read" })',
      });
      const filtered = `Consul filtered the service intentions by ACLs: the token lacks intentions:read on some destinations. Grant ${describe().permission}.`;
      if (one) {
        const r = await getJson<Record<string, RawIntention[] | null> | null>(describe, req, opts, "/connect/intentions/match", { by: "destination", name: req.destination! }, filtered);
        const data = (r.data && Object.hasOwn(r.data, req.destination!) ? r.data[req.destination!] : undefined) ?? [];
        return { data: Array.isArray(data) ? data : [], index: r.index };
      }
      const r = await getJson<RawIntention[] | null>(describe, req, opts, "/connect/intentions", {}, filtered);
      const data = Array.isArray(r.data) ? r.data : [];
      if (data.length === 0) await emptyCheck(describe);
      return { data, index: r.index };
    },

    async configEntries(req: ConfigEntriesRequest, opts: ReadOptions = {}): Promise<ReadResult<RawConfigEntry[]>> {
      const one = req.name !== undefined;
      const describe = () => ({
        what: one ? `reading config entry ${quote(req.kind)} ${quote(req.name!)}` : `listing the config entries of kind ${quote(req.kind)}`,
        permission: "the read permission of that kind (service:read for service-defaults, -resolver, -router, -splitter and gateways; intentions:read for service-intentions; mesh:read for exported-services and api-gateway)",
      });
      let path: string;
      try {
        path = `/config/${encodeURIComponent(req.kind)}${one ? `/${encodeURIComponent(req.name!)}` : ""}`;
      } catch (err) {
        return Promise.reject(err);
      }
      try {
        const r = await getJson<RawConfigEntry | RawConfigEntry[] | null>(describe, req, opts, path, {}, `Consul filtered the config entries of kind ${quote(req.kind)} by ACLs: the token lacks ${describe().permission} on some of them.`);
        const data = r.data === undefined || r.data === null ? [] : Array.isArray(r.data) ? r.data : [r.data];
        if (data.length === 0 && !one) await emptyCheck(describe);
        return { data, index: r.index };
      } catch (err) {
        // A missing entry is no entry (as a missing KV key): its 404 carries the index to block on.
        if (one && err instanceof CtsError && err.detail.status === 404) return { data: [], index: indexOf(err) };
        throw err;
      }
    },
  };
}

/** X-Consul-Index of a failed answer (a 404 of a blocking read carries one). */
function indexOf(err: CtsError): bigint {
  const header = (err.cause as { response?: { headers?: Record<string, string | string[] | undefined> } } | undefined)?.response?.headers?.["x-consul-index"];
  const raw = Array.isArray(header) ? header[0] : header;
  try {
    return raw ? BigInt(raw) : 0n;
  } catch {
    return 0n;
  }
}
