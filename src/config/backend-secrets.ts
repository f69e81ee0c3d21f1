import type { BackendConfig } from "./types.ts";

/**
 * Backend settings that hold credentials, with the environment variable each backend reads the
 * same setting from when the block leaves it out (the backends' documented defaults). CTS writes
 * them into its main.tf; cts keeps them out of every file: they leave main.tf.json and reach
 * Terraform through the environment of its commands, so the meaning is the same. (A
 * `-backend-config` file would not do: Terraform copies what it passes into
 * `.terraform/terraform.tfstate` in the working directory.)
 */
export const BACKEND_SECRET_ENV: Readonly<Record<string, Readonly<Record<string, string>>>> = {
  consul: { access_token: "CONSUL_HTTP_TOKEN", http_auth: "CONSUL_HTTP_AUTH" },
  s3: { access_key: "AWS_ACCESS_KEY_ID", secret_key: "AWS_SECRET_ACCESS_KEY", token: "AWS_SESSION_TOKEN" },
  azurerm: { access_key: "ARM_ACCESS_KEY", sas_token: "ARM_SAS_TOKEN", client_secret: "ARM_CLIENT_SECRET", client_certificate_password: "ARM_CLIENT_CERTIFICATE_PASSWORD" },
  gcs: { credentials: "GOOGLE_BACKEND_CREDENTIALS", access_token: "GOOGLE_OAUTH_ACCESS_TOKEN", encryption_key: "GOOGLE_ENCRYPTION_KEY" },
  cos: { secret_id: "TENCENTCLOUD_SECRET_ID", secret_key: "TENCENTCLOUD_SECRET_KEY", security_token: "TENCENTCLOUD_SECURITY_TOKEN" },
  kubernetes: { token: "KUBE_TOKEN", password: "KUBE_PASSWORD", client_key: "KUBE_CLIENT_KEY_DATA" },
  pg: { conn_str: "PG_CONN_STR" },
};

/** The variable a backend setting is a credential for, if it is one. */
export const backendSecretEnvName = (type: string, key: string): string | undefined => (Object.hasOwn(BACKEND_SECRET_ENV, type) ? BACKEND_SECRET_ENV[type]![key] : undefined);

/**
 * The environment that carries the backend's credentials to every Terraform command of a task
 * (empty values left out, as Terraform treats an empty setting as unset). It is laid over the
 * Consul environment: `backend "consul" { access_token = "…" }` is the token the state is kept with.
 */
export function backendSecretEnv(backend: BackendConfig | undefined): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [type, attrs] of Object.entries(backend ?? {}))
    for (const [k, v] of Object.entries(attrs ?? {})) {
      const name = backendSecretEnvName(type, k);
      if (name !== undefined && v !== undefined && v !== null && String(v) !== "") env[name] = String(v);
    }
  return env;
}
