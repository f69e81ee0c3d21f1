import { request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";
import type { CallDescription } from "../consul/api-error.ts";
import type { ConsulClient } from "../consul/client.ts";
import type { Answer, CommonCallOptions, PackageClient } from "../consul/package.ts";
import { replyOf, statusOf, type CallOptions } from "../consul/transport.ts";
import { CtsError, messageOf, type ErrorCode } from "../errors/cts-error.ts";
import type { Logger } from "../log/logger.ts";
import { VERSION } from "../version.ts";
import type { ServiceRegistrationConfig } from "../config/service-registration.ts";

/** The service name cts registers itself under (CTS's, lower-cased as the issue asks). */
export const SELF_SERVICE_NAME = "consul-terraform-sync";
/** The tag on the registration. */
export const SELF_SERVICE_TAG = "cts";

/** Agent failures as short sentences ("the agent answered 403: …"); the caller adds what to do. */
function agentError(code: ErrorCode) {
  return (err: unknown, call: CallDescription): CtsError => {
    const status = statusOf(err);
    const reply = replyOf(err);
    const message = status !== undefined ? `the agent answered ${status}${reply ? `: ${reply}` : ""}` : `Consul at ${call.url} is unreachable: ${messageOf(err)}`;
    return new CtsError(code, "external", message, { cause: err, ...(status !== undefined ? { detail: { status } } : {}) });
  };
}

/**
 * The agent answers its own endpoints without the servers (a registration, its services): such an
 * answer says nothing of whether Consul works, so it never marks Consul back (reachability.ts).
 */
const AGENT_ONLY = { answeredBy: () => "agent" as const };

/** `/v1/status/leader`: an empty answer is an agent that knows no leader (Consul unavailable). */
const LEADER_ANSWER = { answeredBy: (body: unknown) => (typeof body === "string" && body !== "" ? ("agent" as const) : ("no-leader" as const)) };

/** One plain agent call on the process's Consul client, with a hard timeout. */
function agentCall<T>(
  consul: ConsulClient,
  what: string,
  code: ErrorCode,
  timeoutMs: number,
  run: (c: PackageClient, common: CommonCallOptions) => Promise<Answer<T>>,
  answers: Pick<CallOptions, "answeredBy"> = AGENT_ONLY,
) {
  return consul.call({ what, permission: `service:write on "${SELF_SERVICE_NAME}"` }, {}, { timeoutMs, ...answers }, run, agentError(code));
}

/** Why Consul cannot be used right now, or undefined when it has a leader. Never throws. */
export async function consulProblem(consul: ConsulClient, timeoutMs = 2_000): Promise<string | undefined> {
  try {
    const res = await agentCall(consul, "reading /v1/status/leader", "CONSUL_UNREACHABLE", timeoutMs, (c, common) => c.status.leader(common), LEADER_ANSWER);
    return typeof res.data === "string" && res.data !== "" ? undefined : `Consul at ${consul.url()} has no leader`;
  } catch (err) {
    const status = err instanceof CtsError ? err.detail.status : undefined;
    return status !== undefined ? `Consul at ${consul.url()} answered ${status} to /v1/status/leader` : messageOf(err);
  }
}

/**
 * Another live instance registered with this id on the local agent, in words, or undefined. The
 * same instance restarting is not one: its registration names the address and port this API now
 * listens on, or nothing answers at the address it names (a dead process). Anything else that
 * answers HTTP there is alive, and registering over it would take its registration away.
 * Undefined too when the agent cannot be asked (the registration then says why).
 */
export async function liveInstanceWithId(consul: ConsulClient, opts: Omit<SelfRegistrationOptions, "log">, timeoutMs = 2_000): Promise<string | undefined> {
  let services: Record<string, { ID?: string; Service?: string; Address?: string; Port?: number }>;
  try {
    const res = await agentCall(consul, "listing the agent's services", "CONSUL_REGISTER_FAILED", 5_000, (c, common) => c.agent.service.list(common));
    services = res.data ?? {};
  } catch {
    return undefined;
  }
  const svc = services[opts.id];
  if (!svc || svc.Service !== SELF_SERVICE_NAME || typeof svc.Port !== "number") return undefined;
  const theirs = svc.Address ?? "";
  const ours = WILDCARD.has(opts.address) ? "" : opts.address;
  if (svc.Port === opts.port && (theirs === ours || theirs === "" || ours === "")) return undefined;
  const host = theirs === "" ? "127.0.0.1" : theirs;
  if (!(await answersHttp(host, svc.Port, opts.https === true, timeoutMs))) return undefined;
  return `another cts instance is registered in Consul with id '${opts.id}' and answers at ${host}:${svc.Port}: two instances with one id take each other's registration (and, with high availability, each other's place). Set a unique id in the config (cts.config.ts \`id\`, CTS HCL \`id\`), or stop the other instance.`;
}

/** Whether anything answers HTTP(S) at a URL's host and port within the limit (any status counts; an unparsable URL: no). */
export function answersAt(url: string, timeoutMs = 2_000): Promise<boolean> {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return Promise.resolve(false);
  }
  const https = u.protocol === "https:";
  const host = u.hostname.replace(/^\[|\]$/g, "");
  return answersHttp(host, Number(u.port || (https ? 443 : 80)), https, timeoutMs);
}

/** Whether anything answers HTTP(S) at host:port within the limit (any status counts). */
function answersHttp(host: string, port: number, https: boolean, timeoutMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    const request = https ? httpsRequest : httpRequest;
    const req = request({ host, port, path: "/v1/health", method: "GET", timeout: timeoutMs, ...(https ? { rejectUnauthorized: false } : {}) }, (res) => {
      res.resume();
      resolve(true);
    });
    req.on("timeout", () => req.destroy());
    req.on("error", () => resolve(false));
    req.end();
  });
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
  /** CTS's `service_registration` settings (name, advertised address, namespace, check). */
  registration?: ServiceRegistrationConfig;
  /** How often the agent's services are checked for this registration, which is put back when gone (default 30 s). */
  checkEveryMs?: number;
  log: Logger;
}

/** A registration that can be removed. */
export interface SelfRegistration {
  /** Whether the agent accepted the registration. */
  registered: boolean;
  /** Deregisters (a no-op when registration failed); never throws. Returns the step skipped because Consul is unreachable, if any. */
  deregister(): Promise<string | undefined>;
}

const WILDCARD = new Set(["0.0.0.0", "::", "[::]", ""]);

/** The health check's URL: CTS joins `/v1/health` to the configured address's path. */
function checkUrl(opts: Omit<SelfRegistrationOptions, "log">, checkHost: string): string {
  const configured = opts.registration?.defaultCheck ? opts.registration.defaultCheck.address : undefined;
  if (!configured) return `${opts.https ? "https" : "http"}://${checkHost}:${opts.port}/v1/health`;
  const url = new URL(configured);
  url.pathname = `${url.pathname.replace(/\/+$/, "")}/v1/health`;
  return url.toString();
}

/**
 * The agent's service definition for this instance, as CTS's: service `consul-terraform-sync` (or
 * `service_name`), tag `cts`, and an HTTP check on /v1/health every 10 s, critical until it passes.
 */
export function selfServiceDefinition(opts: Omit<SelfRegistrationOptions, "log">): Record<string, unknown> {
  const reg = opts.registration ?? {};
  const wildcard = WILDCARD.has(opts.address);
  // A wildcard listener answers on loopback too, and the agent checking it runs on this host.
  const checkHost = wildcard ? "127.0.0.1" : opts.address.includes(":") ? `[${opts.address}]` : opts.address;
  const address = reg.address ?? (wildcard ? undefined : opts.address);
  return {
    ID: opts.id,
    Name: reg.serviceName ?? SELF_SERVICE_NAME,
    Tags: [SELF_SERVICE_TAG, ...(opts.tags ?? []).filter((t) => t !== SELF_SERVICE_TAG)],
    // Empty makes Consul advertise the node's address.
    ...(address !== undefined ? { Address: address } : {}),
    // CTS sends the namespace in the body; Consul CE answers 400 (unknown field "Namespace").
    ...(reg.namespace ? { Namespace: reg.namespace } : {}),
    Port: opts.port,
    Meta: { version: opts.version ?? VERSION },
    ...(reg.defaultCheck === false
      ? {}
      : {
          Check: {
            CheckID: `${opts.id}-health`,
            Name: "CTS Health Status",
            Notes: "Check created by Consul-Terraform-Sync",
            Status: "critical",
            HTTP: checkUrl(opts, checkHost),
            // The agent cannot know cts's CA; the check asks for liveness, not identity (CTS sets it too).
            TLSSkipVerify: true,
            Method: "GET",
            Interval: "10s",
            Timeout: "2s",
            DeregisterCriticalServiceAfter: "30m",
          },
        }),
  };
}

/**
 * Registers this instance with the local Consul agent, as CTS does. A failure is logged and the
 * daemon goes on: the registration is a convenience for discovery, not a reason to stop syncing.
 */
export async function registerSelf(consul: ConsulClient, opts: SelfRegistrationOptions): Promise<SelfRegistration> {
  const { log } = opts;
  if (opts.registration?.enabled === false) {
    log.info("service registration is disabled: not registering this instance in Consul", { id: opts.id });
    return { registered: false, deregister: async () => undefined };
  }
  const definition = selfServiceDefinition(opts);
  const name = String(definition.Name);
  // The namespace goes in the client's namespace scope (X-Consul-Namespace); the package's
  // register() keeps every other field of CTS's body. Consul CE refuses a namespace (400).
  const scope = typeof definition.Namespace === "string" ? { namespace: definition.Namespace } : {};
  const { Namespace: _ns, ...body } = definition;
  const register = (what: string) =>
    consul.call(
      { what, permission: `service:write on "${name}"` },
      scope,
      { timeoutMs: 5_000, ...AGENT_ONLY },
      (c, common) => c.agent.service.register({ ...body, ...common } as Parameters<PackageClient["agent"]["service"]["register"]>[0]),
      agentError("CONSUL_REGISTER_FAILED"),
    );
  try {
    await register("registering this instance");
    log.info(`registered service '${name}' with id '${opts.id}' in Consul`, { id: opts.id, service_name: name });
  } catch (err) {
    log.warn(
      `could not register service '${name}' (id '${opts.id}') in Consul at ${consul.url()}: ${messageOf(err)}. cts keeps running; check the agent address, that the token has service:write on '${name}'${definition.Namespace ? ", and that Consul is Enterprise (namespaces)" : ""}, or set service_registration { enabled = false }.`,
      { id: opts.id, service_name: name },
    );
    return { registered: false, deregister: async () => undefined };
  }
  let stopped = false;
  const restore = async (why: string) => {
    if (stopped) return; // deregistered meanwhile: a check in flight must not put it back
    await register("registering this instance again").then(
      () => log.info(`registered service '${name}' with id '${opts.id}' in Consul again: ${why}`, { id: opts.id, service_name: name }),
      (err: unknown) => log.warn(`could not register service '${name}' (id '${opts.id}') again (${why}): ${messageOf(err)}`, { id: opts.id, service_name: name }),
    );
  };
  // Consul back after an outage (an agent restarted without its data, or deregistered us while we
  // could not see it): register again; the agent takes the same definition as a no-op otherwise.
  const stopRestoring = consul.reachability?.onChange((reachable) => {
    if (reachable) void restore("Consul is back");
  });
  // Without an outage too: an agent restarted between two reads, or someone deregistered the
  // service by hand. The agent's own list is checked on a slow timer and the service put back.
  let checking = false;
  const timer = setInterval(() => {
    if (checking || (consul.reachability && !consul.reachability.reachable)) return;
    checking = true;
    consul
      .call({ what: "reading the agent's services", permission: `service:read on "${name}"` }, scope, { timeoutMs: 5_000, ...AGENT_ONLY }, (c, common) => c.agent.service.list(common), agentError("CONSUL_REGISTER_FAILED"))
      .then((res) => (res.data && !(opts.id in res.data) ? restore("the agent no longer had it") : undefined))
      .catch(() => undefined) // unreachable: the reachability tracker says so, and restores when back
      .finally(() => (checking = false));
  }, opts.checkEveryMs ?? 30_000);
  timer.unref();
  return {
    registered: true,
    async deregister() {
      stopped = true;
      stopRestoring?.();
      clearInterval(timer);
      // Stopping must not wait on a Consul that is gone (SIGTERM during an outage): the agent
      // drops the registration itself once its check is critical for 30 min.
      if (consul.reachability && !consul.reachability.reachable) {
        log.warn(`not deregistering service id '${opts.id}': Consul is unreachable (the agent removes it after its check stays critical for 30m)`, { id: opts.id });
        return `deregistering service id '${opts.id}'`;
      }
      try {
        await agentCall(consul, "deregistering this instance", "CONSUL_REGISTER_FAILED", 1_000, (c, common) => c.agent.service.deregister({ id: opts.id, ...common }));
        log.info(`deregistered service id '${opts.id}' from Consul`, { id: opts.id });
      } catch (err) {
        log.warn(`could not deregister service id '${opts.id}' from Consul: ${messageOf(err)}`, { id: opts.id });
      }
      return undefined;
    },
  };
}
