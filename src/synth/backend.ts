import { backendSecretEnvName } from "../config/backend-secrets.ts";
import type { BackendConfig } from "../config/types.ts";

/** CTS's default: Consul KV at `consul-terraform-sync/terraform`, gzip, one workspace per task. */
export const DEFAULT_BACKEND: BackendConfig = { consul: { path: "consul-terraform-sync/terraform", gzip: true } };

/** The backend block to synthesize: every setting except the credentials (config/backend-secrets.ts). */
export function backendBlock(backend: BackendConfig | undefined): BackendConfig {
  const b = backend ?? DEFAULT_BACKEND;
  const out: BackendConfig = {};
  for (const [type, attrs] of Object.entries(b)) {
    const clean: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(attrs ?? {})) if (backendSecretEnvName(type, k) === undefined) clean[k] = v;
    out[type] = clean;
  }
  return out;
}
