import type { CtsConfig } from "../config/types.ts";
import type { Source, SourceData } from "../consul/types.ts";
import { createConsulApi } from "../consul/client.ts";
import { readTokenFile } from "../consul/token-file.ts";
import { resolveConsulConnection, type ConsulConnection } from "../consul/connection.ts";
import { createCatalogReader } from "../consul/reader.ts";
import { redactSecret } from "../log.ts";
import type { SkippedServiceListener } from "../watch/types.ts";
import { skippedServiceMessage } from "./skipped-services.ts";

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

/**
 * A one-shot reader of Consul data built from the config (for `cts synth`, doctor): services
 * Consul cannot serve are left out and told to `onSkipped`.
 */
export function createConsulReader(config: CtsConfig): (source: Source, onSkipped?: SkippedServiceListener) => Promise<SourceData> {
  const reader = createCatalogReader(createConsulApi(consulConnectionFor(config)));
  return (source, onSkipped) => reader.read(source, undefined, onSkipped);
}

/** A SkippedServiceListener for one task of a one-shot command: writes the warning once per name. */
export function warnSkipped(task: string, write: (line: string) => void): SkippedServiceListener {
  const told = new Set<string>();
  return (service) => {
    if (told.has(service)) return;
    told.add(service);
    write(`warning: ${skippedServiceMessage(task, service)}`);
  };
}
