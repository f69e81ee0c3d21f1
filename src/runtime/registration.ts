import { request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";
import { httpsOptions, type ConsulConnection } from "../consul/connection.ts";
import { CtsError, messageOf } from "../errors.ts";
import type { Logger } from "../log.ts";
import { VERSION } from "../version.ts";

/** The service name cts registers itself under (CTS's, lower-cased as the issue asks). */
export const SELF_SERVICE_NAME = "consul-terraform-sync";
/** The tag on the registration. */
export const SELF_SERVICE_TAG = "cts";

/** What one agent call answered. */
export interface AgentAnswer {
  status: number;
  body: string;
}

/**
 * One plain (non-blocking) call to the Consul agent with the connection's token and TLS files. The
 * catalog client has no agent endpoints, and the health probe needs a short, hard timeout.
 */
export function agentRequest(conn: ConsulConnection, method: string, path: string, body?: unknown, timeoutMs = 5_000): Promise<AgentAnswer> {
  const secure = conn.scheme === "https";
  const payload = body === undefined ? undefined : JSON.stringify(body);
  const headers: Record<string, string> = {};
  if (conn.token) headers["x-consul-token"] = conn.token;
  if (payload !== undefined) headers["content-type"] = "application/json";
  const tls = secure ? httpsOptions(conn) : {};
  return new Promise((resolve, reject) => {
    const req = (secure ? httpsRequest : httpRequest)(
      { host: conn.host, port: conn.port, method, path, headers, timeout: timeoutMs, ...tls },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (d: string) => (text += d));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body: text }));
        res.on("error", reject);
      },
    );
    req.on("timeout", () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    req.on("error", reject);
    req.end(payload);
  });
}


/** Why Consul cannot be used right now, or undefined when it has a leader. Never throws. */
export async function consulProblem(conn: ConsulConnection, timeoutMs = 2_000): Promise<string | undefined> {
  try {
    const res = await agentRequest(conn, "GET", "/v1/status/leader", undefined, timeoutMs);
    if (res.status !== 200) return `Consul at ${conn.url} answered ${res.status} to /v1/status/leader`;
    const leader = JSON.parse(res.body || '""') as unknown;
    return typeof leader === "string" && leader !== "" ? undefined : `Consul at ${conn.url} has no leader`;
  } catch (err) {
    return `Consul at ${conn.url} is unreachable: ${messageOf(err)}`;
  }
}

/** Where the API listens, as the registration advertises it. */
export interface SelfRegistrationOptions {
  /** The instance id (service id). */
  id: string;
  /** The API's listen address (a wildcard address is advertised as the node's address). */
  address: string;
  /** The API's port. */
  port: number;
  /** cts version (service meta). */
  version?: string;
  /** Tags added to `cts` (e.g. a high-availability cluster tag). */
  tags?: string[];
  /** The API serves HTTPS (the health check uses https). */
  https?: boolean;
  log: Logger;
}

/** A registration that can be removed. */
export interface SelfRegistration {
  /** Whether the agent accepted the registration. */
  registered: boolean;
  /** Deregisters (a no-op when registration failed); never throws. */
  deregister(): Promise<void>;
}

const WILDCARD = new Set(["0.0.0.0", "::", "[::]", ""]);

/** The agent's service definition for this instance: HTTP check on /v1/health every 10 s, as CTS. */
export function selfServiceDefinition(opts: Omit<SelfRegistrationOptions, "log">): Record<string, unknown> {
  const wildcard = WILDCARD.has(opts.address);
  // A wildcard listener answers on loopback too, and the agent checking it runs on this host.
  const checkHost = wildcard ? "127.0.0.1" : opts.address.includes(":") ? `[${opts.address}]` : opts.address;
  return {
    ID: opts.id,
    Name: SELF_SERVICE_NAME,
    Tags: [SELF_SERVICE_TAG, ...(opts.tags ?? []).filter((t) => t !== SELF_SERVICE_TAG)],
    // Empty makes Consul advertise the node's address.
    ...(wildcard ? {} : { Address: opts.address }),
    Port: opts.port,
    Meta: { version: opts.version ?? VERSION },
    Check: {
      CheckID: `${opts.id}-health`,
      Name: "CTS Health Status",
      HTTP: `${opts.https ? "https" : "http"}://${checkHost}:${opts.port}/v1/health`,
      // The agent cannot know cts's CA; the check asks for liveness, not identity.
      ...(opts.https ? { TLSSkipVerify: true } : {}),
      Method: "GET",
      Interval: "10s",
      Timeout: "2s",
      DeregisterCriticalServiceAfter: "30m",
    },
  };
}

/**
 * Registers this instance with the local Consul agent, as CTS does. A failure is logged and the
 * daemon goes on: the registration is a convenience for discovery, not a reason to stop syncing.
 */
export async function registerSelf(conn: ConsulConnection, opts: SelfRegistrationOptions): Promise<SelfRegistration> {
  const { log } = opts;
  const definition = selfServiceDefinition(opts);
  try {
    const res = await agentRequest(conn, "PUT", "/v1/agent/service/register", definition);
    if (res.status !== 200) throw new CtsError("CONSUL_REGISTER_FAILED", "external", `the agent answered ${res.status}: ${res.body.trim().slice(0, 300)}`);
    log.info(`registered service '${SELF_SERVICE_NAME}' with id '${opts.id}' in Consul`, { id: opts.id });
  } catch (err) {
    log.warn(
      `could not register service '${SELF_SERVICE_NAME}' (id '${opts.id}') in Consul at ${conn.url}: ${messageOf(err)}. cts keeps running; check the agent address and that the token has service:write on '${SELF_SERVICE_NAME}'.`,
      { id: opts.id },
    );
    return { registered: false, deregister: async () => {} };
  }
  return {
    registered: true,
    async deregister() {
      try {
        const res = await agentRequest(conn, "PUT", `/v1/agent/service/deregister/${encodeURIComponent(opts.id)}`);
        if (res.status !== 200) throw new Error(`the agent answered ${res.status}: ${res.body.trim().slice(0, 300)}`);
        log.info(`deregistered service id '${opts.id}' from Consul`, { id: opts.id });
      } catch (err) {
        log.warn(`could not deregister service id '${opts.id}' from Consul: ${messageOf(err)}`, { id: opts.id });
      }
    },
  };
}
