import type { BackendConfig } from "../config/types.ts";

/** CTS's default: Consul KV at `consul-terraform-sync/terraform`, gzip, one workspace per task. */
export const DEFAULT_BACKEND: BackendConfig = { consul: { path: "consul-terraform-sync/terraform", gzip: true } };

const SECRET_KEYS = new Set(["access_token", "token", "http_auth", "password", "secret_key", "access_key", "client_secret"]);

/**
 * The backend block to synthesize. Credentials never go into JSON (Terraform reads
 * CONSUL_HTTP_TOKEN and friends from the environment), so secret-looking keys are refused.
 */
export function backendBlock(backend: BackendConfig | undefined): BackendConfig {
  const b = backend ?? DEFAULT_BACKEND;
  const out: BackendConfig = {};
  for (const [type, attrs] of Object.entries(b)) {
    const clean: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(attrs ?? {})) if (!SECRET_KEYS.has(k)) clean[k] = v;
    out[type] = clean;
  }
  return out;
}

/** Names of backend settings that were dropped because they hold credentials. */
export function secretBackendKeys(backend: BackendConfig | undefined): string[] {
  const found: string[] = [];
  for (const [type, attrs] of Object.entries(backend ?? {})) for (const k of Object.keys(attrs ?? {})) if (SECRET_KEYS.has(k)) found.push(`${type}.${k}`);
  return found;
}
