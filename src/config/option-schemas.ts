import { z } from "zod";
import type { ConsulAuth } from "../consul/connection.ts";
import type { TlsFileSettings } from "../tls-files.ts";
import type { NotificationsConfig, WebhookConfig } from "./notifications.ts";
import { bufferPeriod, driftCheck, planGuards } from "../task/option-schemas.ts";
import { falseOr, strict, value, type ShapeOf } from "../task/strict-options.ts";
import type {
  ApiConfig,
  ConsulConfig,
  ConsulTlsConfig,
  ConsulTransportConfig,
  CtsConfig,
  HaStorageConfig,
  HighAvailabilityConfig,
  RunHistoryOption,
  ServiceRegistrationConfig,
  TerraformCloudDriverConfig,
  TerraformDriverConfig,
  VaultConfig,
} from "./types.ts";

// The keys of `defineConfig({...})` and of every object nested in it, each tied to its type by
// `satisfies ShapeOf<T>`. The tasks are checked by their own constructors (task/checked.ts); a
// backend block, provider versions and a task's variables are free-form and not checked here.

type Of<T> = NonNullable<T>;

export const consulTls = strict({
  enabled: value(),
  caFile: value(),
  caPath: value(),
  certFile: value(),
  keyFile: value(),
  serverName: value(),
  insecureSkipVerify: value(),
} satisfies ShapeOf<ConsulTlsConfig>);
export const consulAuth = strict({ username: value(), password: value() } satisfies ShapeOf<ConsulAuth>);
export const defaultCheck = strict({ address: value() } satisfies ShapeOf<Exclude<Of<ServiceRegistrationConfig["defaultCheck"]>, false>>);
export const serviceRegistration = strict({
  enabled: value(),
  serviceName: value(),
  address: value(),
  namespace: value(),
  defaultCheck: falseOr(defaultCheck).optional(),
} satisfies ShapeOf<ServiceRegistrationConfig>);
export const consulTransport = strict({
  keepAlive: value(),
  keepAliveMsecs: value(),
  maxFreeSockets: value(),
  freeSocketTimeoutMs: value(),
  connectTimeoutMs: value(),
  tlsHandshakeTimeoutMs: value(),
} satisfies ShapeOf<ConsulTransportConfig>);
export const consul = strict({
  address: value(),
  token: value(),
  tokenFile: value(),
  tls: consulTls.optional(),
  auth: consulAuth.optional(),
  serviceRegistration: serviceRegistration.optional(),
  transport: consulTransport.optional(),
} satisfies ShapeOf<ConsulConfig>);

export const syslog = strict({ facility: value(), name: value(), socket: value(), enabled: value() } satisfies ShapeOf<Of<CtsConfig["syslog"]>>);
export const tlsFiles = strict({ caCert: value(), caPath: value(), cert: value(), key: value(), serverName: value(), verify: value() } satisfies ShapeOf<TlsFileSettings>);
export const vault = strict({
  address: value(),
  token: value(),
  agentTokenFile: value(),
  namespace: value(),
  renewToken: value(),
  unwrapToken: value(),
  defaultLeaseDuration: value(),
  tls: tlsFiles.optional(),
} satisfies ShapeOf<VaultConfig>);

export const commandTimeouts = strict({
  version: value(),
  workspace: value(),
  validate: value(),
  init: value(),
  show: value(),
  silence: value(),
} satisfies ShapeOf<Of<TerraformDriverConfig["commandTimeouts"]>>);
export const warmProviders = strict({
  maxProcesses: value(),
  maxRunsPerProcess: value(),
  idleTimeout: value(),
  maxRssMb: value(),
} satisfies ShapeOf<Exclude<Of<TerraformDriverConfig["warmProviders"]>, false>>);
export const terraformDriver = strict({
  binary: value(),
  backend: value(),
  workingDir: value(),
  cliConfigFile: value(),
  pluginCacheDir: value(),
  timeout: value(),
  lockTimeout: value(),
  commandTimeouts: commandTimeouts.optional(),
  warmProviders: falseOr(warmProviders).optional(),
  warmPages: value(),
  providerVersions: value(),
  log: value(),
} satisfies ShapeOf<TerraformDriverConfig>);
export const tfcWorkspaces = strict({ prefix: value(), tags: value(), tagsAllowlist: value(), tagsDenylist: value() } satisfies ShapeOf<Of<TerraformCloudDriverConfig["workspaces"]>>);
export const requiredProvider = strict({ source: value(), version: value() } satisfies ShapeOf<Of<TerraformCloudDriverConfig["requiredProviders"]>[string]>);
export const terraformCloudDriver = strict({
  hostname: value(),
  organization: value(),
  // A string, or { file } / { env } to read it from (which of the two: the value checks say).
  token: z.union([z.string(), strict({ file: value(), env: value() } satisfies ShapeOf<{ file: string; env: string }>)]).optional(),
  workspaces: tfcWorkspaces.optional(),
  tls: tlsFiles.optional(),
  requiredProviders: z.record(z.string(), requiredProvider).optional(),
  timeout: value(),
  lockTimeout: value(),
  pollInterval: value(),
} satisfies ShapeOf<TerraformCloudDriverConfig>);
export const driver = strict({ terraform: terraformDriver.optional(), terraformCloud: terraformCloudDriver.optional() } satisfies ShapeOf<Of<CtsConfig["driver"]>>);

export const apiTls = strict({ certFile: value(), keyFile: value(), caFile: value(), caPath: value(), verifyIncoming: value() } satisfies ShapeOf<Of<ApiConfig["tls"]>>);
export const api = strict({
  address: value(),
  port: value(),
  tls: apiTls.optional(),
  token: value(),
  tokenFile: value(),
  metricsRequireToken: value(),
  allowedOrigins: value(),
  allowedHosts: value(),
} satisfies ShapeOf<ApiConfig>);

export const haStorage = strict({ parentPath: value(), sessionTtl: value(), namespace: value(), lockDelay: value() } satisfies ShapeOf<HaStorageConfig>);
export const haCluster = strict({ name: value(), storage: haStorage.optional(), mode: value(), settle: value() } satisfies ShapeOf<HighAvailabilityConfig["cluster"]>);
export const haInstance = strict({ address: value() } satisfies ShapeOf<Of<HighAvailabilityConfig["instance"]>>);
export const highAvailability = strict({ cluster: haCluster.optional(), instance: haInstance.optional() } satisfies ShapeOf<HighAvailabilityConfig>);

export const runHistory = strict({ keep: value(), maxAge: value() } satisfies ShapeOf<RunHistoryOption>);

export const webhook = strict({
  name: value(),
  url: value(),
  format: value(),
  events: value(),
  tasks: value(),
  secret: value(),
  secretEnv: value(),
  timeout: value(),
  retries: value(),
} satisfies ShapeOf<WebhookConfig>);
export const notifications = strict({ webhooks: z.array(webhook).optional(), link: value(), queueSize: value() } satisfies ShapeOf<NotificationsConfig>);

/** `defineConfig({...})`. */
export const ctsConfig = strict({
  id: value(),
  logFormat: value(),
  log_format: value(),
  consul: consul.optional(),
  syslog: syslog.optional(),
  vault: vault.optional(),
  driver: driver.optional(),
  bufferPeriod: falseOr(bufferPeriod).optional(),
  driftCheck: falseOr(driftCheck).optional(),
  guards: planGuards.optional(),
  concurrency: value(),
  history: runHistory.optional(),
  api: api.optional(),
  highAvailability: highAvailability.optional(),
  notifications: notifications.optional(),
  tasks: value(),
} satisfies ShapeOf<CtsConfig>);

/** Every option object of the config by name (the property test takes each one in turn). */
export const CONFIG_OPTION_SCHEMAS = {
  CtsConfig: ctsConfig,
  ConsulConfig: consul,
  ConsulTlsConfig: consulTls,
  ConsulAuth: consulAuth,
  ServiceRegistrationConfig: serviceRegistration,
  DefaultCheck: defaultCheck,
  ConsulTransportConfig: consulTransport,
  SyslogOptions: syslog,
  VaultConfig: vault,
  TlsFileSettings: tlsFiles,
  DriverConfig: driver,
  TerraformDriverConfig: terraformDriver,
  CommandTimeouts: commandTimeouts,
  WarmProviders: warmProviders,
  TerraformCloudDriverConfig: terraformCloudDriver,
  TerraformCloudWorkspaces: tfcWorkspaces,
  RequiredProvider: requiredProvider,
  ApiConfig: api,
  ApiTlsConfig: apiTls,
  HighAvailabilityConfig: highAvailability,
  RunHistoryOption: runHistory,
  NotificationsConfig: notifications,
  WebhookConfig: webhook,
  HaClusterConfig: haCluster,
  HaStorageConfig: haStorage,
  HaInstanceConfig: haInstance,
} as const;
