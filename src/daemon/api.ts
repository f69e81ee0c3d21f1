import type { ApiConfig } from "../config/types.ts";
import type { ServiceRegistrationConfig } from "../config/service-registration.ts";
import { CtsError } from "../errors/cts-error.ts";
import type { Runtime } from "../runtime/interfaces.ts";
import { consulProblem, liveInstanceWithId, registerSelf } from "./registration.ts";
import type { ApiDeps } from "../api/deps.ts";
import { apiToken } from "../api/auth.ts";
import { redactSecret } from "../log/logger.ts";
import { createApiServer, DEFAULT_API_ADDRESS, DEFAULT_API_PORT } from "../api/server.ts";

/** Where the daemon's API listens: flags win over the config. */
export interface DaemonApiOptions {
  address?: string;
  port?: number | string;
  /** Skip self-registration in Consul (tests). */
  register?: boolean;
  /** CTS's service_registration settings (consul.serviceRegistration). */
  registration?: ServiceRegistrationConfig;
  /** Extra tags on the self-registration (high availability's cluster tag). */
  tags?: string[];
  /** High availability: the cluster status and the follower's refusal of task changes. */
  cluster?: ApiDeps["cluster"];
  beforeChange?: ApiDeps["beforeChange"];
  afterChange?: ApiDeps["afterChange"];
  pin?: ApiDeps["pin"];
  /** The daemon's driver (whether tasks created through the API may carry Terraform Cloud settings). */
  driver?: ApiDeps["driver"];
}

/** A health probe that asks Consul at most once per `ttlMs`; concurrent callers share one probe. */
export function cachedProbe(probe: () => Promise<string | undefined>, ttlMs = 1_000): () => Promise<string | undefined> {
  let last: { at: number; value: Promise<string | undefined> } | undefined;
  return () => {
    if (!last || Date.now() - last.at > ttlMs) last = { at: Date.now(), value: probe() };
    return last.value;
  };
}

function portOf(value: number | string | undefined): number {
  const port = typeof value === "string" ? Number(value) : (value ?? DEFAULT_API_PORT);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new CtsError("API_PORT_INVALID", "usage", `API port '${String(value)}' is not 0-65535. Pass e.g. --api-port 8558.`);
  return port;
}

/**
 * Starts the daemon's API, then registers the instance in Consul (a failed registration is logged,
 * not fatal). Returns the stop function: deregister first, so Consul stops routing to us, then close.
 */
export async function startDaemonApi(rt: Runtime, config: ApiConfig | undefined, opts: DaemonApiOptions = {}): Promise<{ url: string; stop: (skipped?: string[]) => Promise<void> }> {
  const log = rt.log.child("api");
  const address = opts.address ?? config?.address ?? DEFAULT_API_ADDRESS;
  const port = portOf(opts.port ?? config?.port);
  const token = apiToken(config);
  if (token) redactSecret(token);
  if (config?.metricsRequireToken && !token)
    throw new CtsError("API_METRICS_TOKEN", "usage", "api.metricsRequireToken is set but no API token is configured. Set api.token, api.tokenFile or CTS_HTTP_TOKEN, or drop metricsRequireToken.");
  const server = createApiServer({
    controller: rt.controller,
    log,
    health: cachedProbe(() => consulProblem(rt.consul)),
    metrics: () => rt.metrics.scrape(),
    instanceId: rt.id,
    consul: rt.consul.reachability,
    ...(opts.cluster ? { cluster: opts.cluster } : {}),
    ...(opts.beforeChange ? { beforeChange: opts.beforeChange } : {}),
    ...(opts.afterChange ? { afterChange: opts.afterChange } : {}),
    ...(opts.pin ? { pin: opts.pin } : {}),
    ...(opts.driver ? { driver: opts.driver } : {}),
  }, {
    ...(config?.tls ? { tls: config.tls } : {}),
    ...(token ? { token } : {}),
    ...(config?.metricsRequireToken ? { metricsRequireToken: true } : {}),
    ...(config?.allowedHosts ? { allowedHosts: config.allowedHosts } : {}),
    ...(config?.allowedOrigins ? { allowedOrigins: config.allowedOrigins } : {}),
  });
  const bound = await server.listen(port, address);
  log.info(`api: listening on ${bound.url}`, { address: bound.address, port: bound.port });
  if (opts.register !== false) {
    const conflict = await liveInstanceWithId(rt.consul, { id: rt.id, address: bound.address, port: bound.port, ...(config?.tls ? { https: true } : {}) });
    if (conflict) {
      await server.close();
      throw new CtsError("INSTANCE_ID_IN_USE", "usage", conflict);
    }
  }
  const registration =
    opts.register === false
      ? undefined
      : await registerSelf(rt.consul, { id: rt.id, address: bound.address, port: bound.port, log, ...(opts.tags ? { tags: opts.tags } : {}), ...(opts.registration ? { registration: opts.registration } : {}), ...(config?.tls ? { https: true } : {}) });
  return {
    url: bound.url,
    /** `skipped` is told the steps skipped because Consul is unreachable (the deregistration). */
    async stop(skipped?: string[]) {
      const step = await registration?.deregister();
      if (step) skipped?.push(step);
      await server.close();
    },
  };
}
