import type { BackendConfig } from "../synth/backend.ts";
import type { BufferPeriodOption, Task } from "../task/task.ts";
import type { Condition, TaskInputs } from "../task/conditions.ts";

/** TLS settings for a connection to Consul. */
export interface ConsulTlsConfig {
  /** Use HTTPS (implied by an https:// address). */
  enabled?: boolean;
  /** CA certificate file (CONSUL_CACERT). */
  caFile?: string;
  /** Client certificate file (CONSUL_CLIENT_CERT). */
  certFile?: string;
  /** Client key file (CONSUL_CLIENT_KEY). */
  keyFile?: string;
  /** Server name to verify (CONSUL_TLS_SERVER_NAME). */
  serverName?: string;
  /** Skip certificate verification (tests only). */
  insecureSkipVerify?: boolean;
}

/** How cts reaches Consul. */
export interface ConsulConfig {
  /** host:port or URL (default CONSUL_HTTP_ADDR, then 127.0.0.1:8500). */
  address?: string;
  /** ACL token (default CONSUL_HTTP_TOKEN / CONSUL_TOKEN). Never logged or written to files. */
  token?: string;
  /** A file holding the token, re-read when it changes. */
  tokenFile?: string;
  /** TLS settings. */
  tls?: ConsulTlsConfig;
}

/** How cts runs Terraform. */
export interface TerraformDriverConfig {
  /** "tofu" (default), "terraform", or a path to either. */
  binary?: string;
  /** Backend block (default: Consul KV at consul-terraform-sync/terraform, gzip). */
  backend?: BackendConfig;
  /** Root of the per-task working dirs (default `sync-tasks`, relative to the config file). */
  workingDir?: string;
  /** Terraform CLI config file (TF_CLI_CONFIG_FILE). */
  cliConfigFile?: string;
  /** Shared provider plugin cache (default `<workingDir>/.plugin-cache`). */
  pluginCacheDir?: string;
  /** Per-command timeout (default "30m"). */
  timeout?: string | number;
  /** Provider version constraints written instead of the cdktf bindings' exact pins. */
  providerVersions?: Record<string, string>;
}

/** The HTTP API. */
export interface ApiConfig {
  /** Listen address (default 127.0.0.1; never all interfaces unless you say so). */
  address?: string;
  /** Port (default 8558; 0 picks a free one). */
  port?: number;
}

/** Everything `cts.config.ts` can say. */
export interface CtsConfig {
  /** This instance's id (default `cts-<hostname>`). */
  id?: string;
  /** Consul connection. */
  consul?: ConsulConfig;
  /** Terraform driver. */
  driver?: { terraform?: TerraformDriverConfig };
  /** Global buffer period (default min 5s, max 20s); `false` turns it off. */
  bufferPeriod?: BufferPeriodOption | false;
  /** How many tasks may run Terraform at once (default 4). */
  concurrency?: number;
  /** HTTP API. */
  api?: ApiConfig;
  /** The tasks. */
  tasks: Array<Task<Condition, TaskInputs>>;
}

/** Declares the configuration in `cts.config.ts` (typed identity). */
export function defineConfig(config: CtsConfig): CtsConfig {
  return config;
}
