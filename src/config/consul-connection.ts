import { resolveConsulConnection, type ConsulConnection } from "../consul/connection.ts";
import { readTokenFile } from "../consul/token-file.ts";
import { redactSecret } from "../log.ts";
import type { CtsConfig } from "./types.ts";

/** The token file a config names (consul.tokenFile, else CONSUL_HTTP_TOKEN_FILE), if any. */
export function tokenFileFor(config: CtsConfig): string | undefined {
  return config.consul?.tokenFile ?? (process.env.CONSUL_HTTP_TOKEN_FILE || undefined);
}

/** The Consul connection a config describes (env fallbacks as CTS: CONSUL_HTTP_ADDR, CONSUL_HTTP_TOKEN…). */
export function consulConnectionFor(config: CtsConfig, tokenOverride?: string): ConsulConnection {
  const c = config.consul ?? {};
  const file = tokenFileFor(config);
  const token = tokenOverride ?? c.token ?? (file ? readTokenFile(file) : undefined);
  const conn = resolveConsulConnection({
    ...(c.address !== undefined ? { address: c.address } : {}),
    ...(token !== undefined ? { token } : {}),
    ...(c.tls ? { tls: c.tls } : {}),
  });
  redactSecret(conn.token);
  return conn;
}
