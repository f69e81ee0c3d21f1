import type { ConsulTlsOptions } from "../consul/connection.ts";
import type { TlsFileSettings } from "../tls-files.ts";
import type { BufferPeriodOption, DriftCheckOption, Task } from "../task/task.ts";
import type { Condition, TaskInputs } from "../task/conditions.ts";
import type { ServiceRegistrationConfig } from "./service-registration.ts";

import type { ConsulTransportConfig } from "./consul-transport.ts";
import type { SyslogOptions } from "../log/syslog.ts";

export type { ServiceRegistrationConfig } from "./service-registration.ts";
export type { ConsulTransportConfig } from "./consul-transport.ts";
import type { GuardSettings } from "../task/guards.ts";
import type { NotificationsConfig } from "./notifications.ts";
export type { NotificationKind, NotificationsConfig, WebhookConfig } from "./notifications.ts";
import type { TemplateValue } from "../task/provider-templates.ts";

/** TLS settings for a connection to Consul (the same options the Consul client takes). */
export type ConsulTlsConfig = ConsulTlsOptions;

/** Terraform backend settings as written in the `terraform.backend` block: `{ consul: {...} }`. */
export type BackendConfig = Record<string, Record<string, unknown>>;

/** How cts reaches Consul. */
export interface ConsulConfig {
  /** host:port or URL (default CONSUL_HTTP_ADDR, then 127.0.0.1:8500). */
  address?: string;
  /**
   * ACL token (default CONSUL_HTTP_TOKEN / CONSUL_TOKEN). Never logged or written to files. Or a
   * field of a Vault secret, `vaultSecret("secret/data/cts", "token")` (CTS #825): read before the
   * first call to Consul, kept fresh while cts runs, a new value used from the next call on.
   */
  token?: string | TemplateValue;
  /** A file holding the token, re-read when it changes. */
  tokenFile?: string;
  /** TLS settings. */
  tls?: ConsulTlsConfig;
  /**
   * HTTP basic auth on every request to Consul, e.g. for a proxy in front of it (CTS's `auth {}`;
   * default CONSUL_HTTP_AUTH, `user:pass`). Also given to Terraform as CONSUL_HTTP_AUTH. The
   * password is never logged or written to files.
   */
  auth?: { username: string; password?: string };
  /** How this instance registers itself in Consul (CTS's `service_registration`; default on). */
  serviceRegistration?: ServiceRegistrationConfig;
  /** Limits of the HTTP connections to Consul (CTS's `transport`), in Node's terms. */
  transport?: ConsulTransportConfig;
}

/**
 * Vault, for the secrets `terraform_provider` templates and `vaultSecret()` read (CTS's `vault {}`).
 * Unset fields fall back to VAULT_ADDR, VAULT_TOKEN, VAULT_NAMESPACE, VAULT_CACERT, VAULT_CAPATH,
 * VAULT_CLIENT_CERT, VAULT_CLIENT_KEY, VAULT_TLS_SERVER_NAME, VAULT_SKIP_VERIFY.
 */
export interface VaultConfig {
  /** http(s)://host:port (default VAULT_ADDR). */
  address?: string;
  /** The token (default VAULT_TOKEN, then ~/.vault-token). Never logged or written to files. */
  token?: string;
  /** A file holding the token (Vault Agent's sink): wins over `token`; a new token written into it is used from then on. */
  agentTokenFile?: string;
  /** Vault Enterprise namespace (default VAULT_NAMESPACE). */
  namespace?: string;
  /** Renew the token while cts runs (default true, false with agentTokenFile). */
  renewToken?: boolean;
  /** The token is a response-wrapping token: unwrap it at start and use the token it holds. */
  unwrapToken?: boolean;
  /** How long a secret without a lease is kept before it is read again (default 5m, as CTS). */
  defaultLeaseDuration?: string;
  tls?: TlsFileSettings;
}

/**
 * The Terraform Cloud / Enterprise driver (CTS's `driver "terraform-cloud"`): each task is a
 * workspace `<prefix><task>` in one organization; runs happen there.
 */
export interface TerraformCloudDriverConfig {
  /** Default `https://app.terraform.io`, else `TFC_HOSTNAME`; a bare host means https. */
  hostname?: string;
  /** The organization (else `TFC_ORGANIZATION`). */
  organization?: string;
  /** A team or user API token (else `TFC_TOKEN`); never written to disk or logs. `{ file }` or `{ env }` read it from there. */
  token?: string | { file: string } | { env: string };
  workspaces?: {
    /** Workspace name = prefix + task name (default ""). */
    prefix?: string;
    /** Tags added to each workspace besides `source:cts` (added, never removed). */
    tags?: string[];
    /** A found workspace must carry at least one of these tags. */
    tagsAllowlist?: string[];
    /** A found workspace must carry none of these tags (wins over the allowlist). */
    tagsDenylist?: string[];
  };
  /** TLS for a Terraform Enterprise behind a private CA (CTS's driver `tls` block). */
  tls?: TlsFileSettings;
  /** `required_providers` entries added to every uploaded root module (CTS's `required_providers`). */
  requiredProviders?: Record<string, { source?: string; version?: string }>;
  /** How long a run is followed before TFC_RUN_TIMEOUT (the run goes on in Terraform Cloud): default "30m", 1s–24h. cts only (CTS has no such key). */
  timeout?: string | number;
  /** How long a workspace locked by someone else is waited for before TFC_WORKSPACE_LOCKED: default "5m", 0s–24h. cts only. */
  lockTimeout?: string | number;
  /** The longest wait between reads of a run (the poll starts 100 ms after each status change and doubles up to it), of a lock or an upload: default "1s", 100ms–1m. cts only. */
  pollInterval?: string | number;
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
  /** Time limit of one plan/apply/destroy, init and workspace included (default "30m"). */
  timeout?: string | number;
  /** How long a command waits for a state lock someone else holds (`-lock-timeout`, default "90s"). */
  lockTimeout?: string | number;
  /** Limits of the short commands, after which they count as hung, are killed and retried once (defaults: version "30s", workspace "60s", validate "60s", init "5m", show "5m"). */
  commandTimeouts?: { version?: string | number; workspace?: string | number; validate?: string | number; init?: string | number; show?: string | number; silence?: string | number };
  /**
   * Keep provider plugin processes running between plan/apply/destroy runs and reattach Terraform
   * to them (TF_REATTACH_PROVIDERS), saving the launch and handshake of every run (default on).
   * `false` turns it off. Limits: `maxProcesses` (8), `maxRunsPerProcess` (100), `idleTimeout`
   * ("5m"), `maxRssMb` (512).
   */
  warmProviders?: false | { maxProcesses?: number; maxRunsPerProcess?: number; idleTimeout?: string | number; maxRssMb?: number };
  /**
   * While quiet spells are kept fast (a task class without a buffer period), read the Terraform
   * binary and the warm providers' binaries through every 30 s, so a VM's host cannot take their
   * cached pages back and the first change after a quiet spell starts OpenTofu as fast as any
   * (default true; about 30 ms of CPU per pass for OpenTofu and a small provider).
   */
  warmPages?: boolean;
  /** Provider version constraints written instead of the cdktf bindings' exact pins. */
  providerVersions?: Record<string, string>;
  /**
   * Terraform's own output (its plan/apply messages, diagnostics and stderr) in the log at info
   * level, as CTS's `driver "terraform" { log = true }`. Default false: at debug level
   * (`--log-level debug`); cts's own lines about each run stay at info either way.
   */
  log?: boolean;
}

/** The HTTP API. */
export interface ApiConfig {
  /** Listen address (default 127.0.0.1; never all interfaces unless you say so). */
  address?: string;
  /** Port (default 8558; 0 picks a free one). */
  port?: number;
  /** Serve HTTPS; with `verifyIncoming`, demand client certificates signed by `caFile` or a CA in the directory `caPath` (mutual TLS). */
  tls?: { certFile: string; keyFile: string; caFile?: string; caPath?: string; verifyIncoming?: boolean };
  /** Bearer token required on task-changing routes (else CTS_HTTP_TOKEN; none = open, as CTS). */
  token?: string;
  /** A file holding that token. */
  tokenFile?: string;
  /** `GET /metrics` needs the bearer token too (default false: open to reads like the other GET routes). */
  metricsRequireToken?: boolean;
  /**
   * Browser origins (`"https://dash.example:8443"`) allowed to change tasks (default none: a
   * task-changing request with an Origin header is refused, so a web page cannot drive the API).
   */
  allowedOrigins?: string[];
  /**
   * Extra names clients use in the Host header (`"cts.internal"`, `"cts.internal:8558"`), beyond the
   * bound address and localhost/127.0.0.1/[::1] with the API's port; others are refused (DNS rebinding).
   */
  allowedHosts?: string[];
}

/** Where a high-availability cluster keeps its lock and state in Consul KV. */
export interface HaStorageConfig {
  /** KV prefix of the leader lock and the stored state (default `consul-terraform-sync/<cluster name>`). */
  parentPath?: string;
  /** TTL of each instance's Consul session (default "15s"; Consul refuses less than its session_ttl_min, 10s by default). */
  sessionTtl?: string | number;
  /** Consul namespace of the KV entries and sessions (Consul Enterprise). */
  namespace?: string;
  /** Consul lock-delay of the leader session (default "0s"; README "High availability" says why). */
  lockDelay?: string | number;
}

/** High availability: one leader runs tasks, the others wait to take over (CTS's `high_availability`). */
export interface HighAvailabilityConfig {
  /** The cluster this instance belongs to. */
  cluster: {
    name: string;
    storage?: HaStorageConfig;
    /**
     * "leader" (default): one leader runs every task, the others wait. "shared": every healthy
     * member runs a share of the tasks, assigned by rendezvous hashing, each fenced by its own lock.
     */
    mode?: "leader" | "shared";
    /** Shared mode: how long the membership must be unchanged before a starting member takes its first tasks (default: the session TTL). */
    settle?: string | number;
  };
  /** How other instances and clients reach this instance's API (default: the address the API listens on). */
  instance?: { address?: string };
}

/** Everything `cts.config.ts` can say. */
export interface CtsConfig {
  /** This instance's id (default `cts-<hostname>`). */
  id?: string;
  /** Log lines as CTS-like text (default) or one JSON object per line; `--log-format` wins. */
  logFormat?: LogFormat;
  /** CTS's spelling of `logFormat`. */
  log_format?: LogFormat;
  /** Consul connection. */
  consul?: ConsulConfig;
  /**
   * Log lines to the local syslog daemon too (CTS's `syslog {}`): `{ facility: "LOCAL0", name:
   * "consul-terraform-sync" }`; `socket` (TypeScript only) is the syslog socket (default /dev/log).
   * `enabled: false` turns it off.
   */
  syslog?: SyslogOptions & { enabled?: boolean };
  /** Vault, for provider templates and `vaultSecret()` values (CTS's `vault {}`). */
  vault?: VaultConfig;
  /** How tasks run Terraform: on this machine (`terraform`, the default) or as Terraform Cloud / Enterprise workspaces (`terraformCloud`); one of the two. */
  driver?: { terraform?: TerraformDriverConfig; terraformCloud?: TerraformCloudDriverConfig };
  /** Global buffer period (default min 5s, max 20s); `false` turns it off. */
  bufferPeriod?: BufferPeriodOption | false;
  /** Drift detection for every task (default off): `{ every: "30m", correct: false }`; tasks may override it. */
  driftCheck?: DriftCheckOption | false;
  /**
   * Plan guards for every task (default none): `{ maxDestroy: 5, maxDestroyPercent: 30, neverEmpty: ["local_file"] }`.
   * A task's own `guards` replace these; a predicate (`check`) belongs on the task.
   */
  guards?: GuardSettings;
  /** How many tasks may run Terraform at once (default 4). */
  concurrency?: number;
  /**
   * How long each task's run history is kept (`GET /v1/tasks/{name}/runs`, `cts history`): the
   * newest `keep` runs (default 50), none older than `maxAge` (default "720h", 30 days).
   * CTS HCL: `cts_history_keep`, `cts_history_max_age`.
   */
  history?: RunHistoryOption;
  /** HTTP API. */
  api?: ApiConfig;
  /** High availability through a leader lock in Consul (src/ha). */
  highAvailability?: HighAvailabilityConfig;
  /** Webhooks told of held plans, failures, recoveries, drift and leadership changes (src/notify/; docs/operations.md "Notifications"). */
  notifications?: NotificationsConfig;
  /** The tasks. */
  tasks: Array<Task<Condition, TaskInputs>>;
}

/** The retention of each task's run history. */
export interface RunHistoryOption {
  /** The newest runs kept per task (1–1000; default 50). */
  keep?: number;
  /** No run older than this is kept ("720h", or ms; default "720h"). */
  maxAge?: string | number;
}

/** How log lines are written. */
export type LogFormat = "text" | "json";

/** Declares the configuration in `cts.config.ts` (typed identity). */
export function defineConfig(config: CtsConfig): CtsConfig {
  return config;
}
