import { createConsulClient, type ConsulClient } from "../consul/client.ts";
import type { ConsulTokenSource } from "../consul/token-source.ts";
import { CtsError } from "../errors/cts-error.ts";
import { isTemplateValue } from "../task/provider-templates.ts";
import { resolveConsulConnection, type ConsulConnection } from "../consul/connection.ts";
import { readTokenFile } from "../consul/token-file.ts";
import { redactSecret, type Logger } from "../log/logger.ts";
import type { Metrics } from "../metrics/metrics.ts";
import type { CtsConfig } from "./types.ts";

/** The token file a config names (consul.tokenFile, else CONSUL_HTTP_TOKEN_FILE), if any. */
export function tokenFileFor(config: CtsConfig): string | undefined {
  return config.consul?.tokenFile ?? (process.env.CONSUL_HTTP_TOKEN_FILE || undefined);
}

/** The Consul connection a config describes (env fallbacks as CTS: CONSUL_HTTP_ADDR, CONSUL_HTTP_TOKEN…). */
export function consulConnectionFor(config: CtsConfig): ConsulConnection {
  const c = config.consul ?? {};
  // A token from Vault (a template) is not known yet: the client waits for it (consulClientFor's tokenSource).
  if (isTemplateValue(c.token)) {
    return resolveConsulConnection({
      ...(c.address !== undefined ? { address: c.address } : {}),
      ...(c.tls ? { tls: c.tls } : {}),
      ...(c.auth ? { auth: c.auth } : {}),
      ...(c.transport ? { transport: c.transport } : {}),
      // Not CONSUL_HTTP_TOKEN from the environment either: the token is the Vault secret's.
      token: "",
    });
  }
  const file = tokenFileFor(config);
  const token = c.token ?? (file ? readTokenFile(file) : undefined);
  const conn = resolveConsulConnection({
    ...(c.address !== undefined ? { address: c.address } : {}),
    ...(token !== undefined ? { token } : {}),
    ...(c.tls ? { tls: c.tls } : {}),
    ...(c.auth ? { auth: c.auth } : {}),
    ...(c.transport ? { transport: c.transport } : {}),
  });
  redactSecret(conn.token);
  if (conn.auth?.password) {
    redactSecret(conn.auth.password);
    // The forms it travels in: CONSUL_HTTP_AUTH and the Authorization header.
    redactSecret(`${conn.auth.username}:${conn.auth.password}`);
    redactSecret(Buffer.from(`${conn.auth.username}:${conn.auth.password}`, "utf8").toString("base64"));
  }
  return conn;
}

/**
 * The process's one Consul client, from the config: every part that talks to Consul gets it. When
 * the token comes from a token file, the file is followed (the one watch of it), so a rotated token
 * reaches every later call and Terraform's environment (`terraformEnv`).
 */
export function consulClientFor(config: CtsConfig, opts: { metrics?: Metrics; log?: Logger; tokenSource?: ConsulTokenSource } = {}): ConsulClient {
  const tokenFile = config.consul?.token === undefined ? tokenFileFor(config) : undefined;
  if (isTemplateValue(config.consul?.token) && !opts.tokenSource)
    throw new CtsError("CTS_INTERNAL", "internal", "consul.token reads a Vault secret, and the Consul client was built without its token source");
  return createConsulClient(consulConnectionFor(config), { ...opts, ...(tokenFile ? { tokenFile } : {}) });
}

// Its own module, so that checking a config (src/config/load.ts) does not load the Consul client.
export { consulAuthProblems } from "./consul-auth.ts";
