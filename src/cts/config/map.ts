import type { CtsConfig, HighAvailabilityConfig, VaultConfig } from "../../config/types.ts";
import { configError, type ReadBlock } from "../../config/hcl-schema.ts";
import { isObject } from "../../values/is-object.ts";
import type { HclValue } from "../../config/hcl.ts";
import { workingRoot } from "../../config/working-dirs.ts";
import { bufferPeriod, ctsTasks, guardsOf } from "./tasks.ts";
import { ctsDrivers } from "./drivers.ts";
import { ctsServiceRegistration } from "../../config/service-registration.ts";
import { ctsConsulTransport } from "../../config/consul-transport.ts";
import { weaklyTyped } from "./weak-types.ts";
import { SYSLOG_FACILITIES, syslogPriority } from "../../log/syslog.ts";
import { guardSettings } from "../../task/guards.ts";
import { tlsFileSettings } from "./tls.ts";
import { ctsNotifications } from "./notifications.ts";
import { parseDuration } from "../../time/duration.ts";
import { parseProviderTemplate, TemplateSyntaxError, type TemplateValue } from "../../task/provider-templates.ts";
import { redactSecret } from "../../log/logger.ts";

/** A CTS config mapped onto ours, with what was accepted but has no effect here. */
export interface MappedCtsConfig {
  config: CtsConfig;
  /** CTS's log_level, as our level name. */
  logLevel?: "trace" | "debug" | "info" | "warn" | "error";
  /** Keys accepted for compatibility that change nothing here (logged at start). */
  warnings: string[];
}

const LEVELS: Record<string, MappedCtsConfig["logLevel"]> = { TRACE: "trace", DEBUG: "debug", INFO: "info", WARN: "warn", ERR: "error", ERROR: "error" };

const one = (b: ReadBlock, name: string): ReadBlock | undefined => b.blocks[name]?.[0];

/**
 * Maps a merged CTS configuration (every file read and merged) onto cts's config. `tasksFor`:
 * "any driver" when only the tasks are taken (fromCtsConfig) and the driver is another config's.
 */
export async function mapCtsConfig(root: ReadBlock, cwd: string, tasksFor?: "any driver"): Promise<MappedCtsConfig> {
  const warnings: string[] = [];
  const warn = (b: ReadBlock, key: string, why: string) => warnings.push(`${b.file}:${b.lines[key] ?? b.line}: '${key}' ${why}`);
  noTemplates(root);
  weaklyTyped(root);
  const config: CtsConfig = { tasks: [] };
  const a = root.attrs;
  let logLevel: MappedCtsConfig["logLevel"];
  if (a.log_level !== undefined) {
    logLevel = LEVELS[String(a.log_level).toUpperCase()];
    if (!logLevel) throw configError(root.file, root.lines.log_level!, `log_level '${String(a.log_level)}' is not one of TRACE, DEBUG, INFO, WARN, ERR.`);
  }
  if (a.id !== undefined) config.id = String(a.id);
  if (a.port !== undefined) config.api = { port: Number(a.port) };
  if (a.license_path !== undefined) throw configError(root.file, root.lines.license_path!, "'license_path' is a CTS Enterprise feature that cts does not need (high availability is built in). Remove it.");
  if (a.client_type !== undefined) warn(root, "client_type", "is CTS-internal (a development/test client) and has no effect here.");
  const history = ctsHistory(root);
  if (history) config.history = history;
  const tf: NonNullable<NonNullable<CtsConfig["driver"]>["terraform"]> = {};
  if (a.working_dir !== undefined) tf.workingDir = String(a.working_dir);

  const syslog = ctsSyslog(one(root, "syslog"));
  if (syslog) config.syslog = syslog;
  const vault = one(root, "vault");
  if (vault) {
    const v = vaultConfig(vault, warn);
    if (v) config.vault = v;
  }
  const ha = one(root, "high_availability");
  if (ha) config.highAvailability = highAvailability(ha);
  const license = one(root, "license");
  if (license) throw configError(license.file, license.line, "'license' is a CTS Enterprise feature that cts does not need. Remove it.");

  const bp = one(root, "buffer_period");
  if (bp) config.bufferPeriod = bufferPeriod(bp);
  const guards = guardsOf(one(root, "guards"), false).guards;
  if (guards) config.guards = guardSettings(guards);
  const notifications = ctsNotifications(root);
  if (notifications) config.notifications = notifications;
  const api = one(root, "tls");
  if (api && (api.attrs.enabled ?? true) !== false) {
    if (api.attrs.cert === undefined || api.attrs.key === undefined) throw configError(api.file, api.line, "'tls' for the API needs cert and key.");
    config.api = {
      ...config.api,
      tls: { certFile: String(api.attrs.cert), keyFile: String(api.attrs.key), ...(api.attrs.ca_cert ? { caFile: String(api.attrs.ca_cert) } : {}), ...(api.attrs.ca_path ? { caPath: String(api.attrs.ca_path) } : {}), ...(api.attrs.verify_incoming ? { verifyIncoming: true } : {}) },
    };
  }

  const consul = one(root, "consul");
  let kvPath = "consul-terraform-sync/";
  if (consul) {
    const c = consul.attrs;
    config.consul = {};
    if (c.address !== undefined) config.consul.address = String(c.address);
    if (c.token !== undefined) config.consul.token = consulToken(consul, String(c.token));
    if (c.kv_path !== undefined) kvPath = String(c.kv_path);
    if (c.kv_namespace !== undefined) warn(consul, "kv_namespace", "has no effect (CTS does not use it either).");
    const auth = one(consul, "auth");
    // As CTS: on when `enabled` says so, or implicitly when a user name or password is set.
    if (auth && (auth.attrs.enabled ?? (auth.attrs.username !== undefined || auth.attrs.password !== undefined)) !== false) {
      // CTS sends what is set (an unset user name is empty), so the same here.
      config.consul.auth = { username: String(auth.attrs.username ?? ""), ...(auth.attrs.password !== undefined ? { password: String(auth.attrs.password) } : {}) };
    }
    const tls = one(consul, "tls");
    if (tls && (tls.attrs.enabled ?? true) !== false) {
      const t = tls.attrs;
      config.consul.tls = {
        enabled: true,
        ...(t.ca_cert !== undefined ? { caFile: String(t.ca_cert) } : {}),
        ...(t.ca_path !== undefined ? { caPath: String(t.ca_path) } : {}),
        ...(t.cert !== undefined ? { certFile: String(t.cert) } : {}),
        ...(t.key !== undefined ? { keyFile: String(t.key) } : {}),
        ...(t.server_name !== undefined ? { serverName: String(t.server_name) } : {}),
        ...(t.verify === false ? { insecureSkipVerify: true } : {}),
      };
    }
    const transport = ctsConsulTransport(one(consul, "transport"));
    if (transport.transport) config.consul.transport = transport.transport;
    warnings.push(...transport.warnings);
    const registration = ctsServiceRegistration(one(consul, "service_registration"));
    if (registration) config.consul.serviceRegistration = registration;
  }

  const drivers = ctsDrivers(root, kvPath, warn);
  if (drivers.label === "terraform-cloud") {
    if (tf.workingDir !== undefined) warn(root, "working_dir", 'is not used with driver "terraform-cloud": runs happen in Terraform Cloud.');
    if (kvPath !== "consul-terraform-sync/") warn(consul!, "kv_path", 'has no effect with driver "terraform-cloud": Terraform Cloud keeps the state.');
    config.driver = { terraformCloud: drivers.terraformCloud! };
  } else {
    Object.assign(tf, drivers.terraform);
    if (!tf.backend && kvPath !== "consul-terraform-sync/") tf.backend = { consul: { path: `${kvPath.replace(/\/$/, "")}/terraform`, gzip: true } };
    if (Object.keys(tf).length) config.driver = { terraform: tf };
  }

  config.tasks = await ctsTasks(root, { cwd, root: workingRoot(cwd, tf.workingDir), providerReqs: drivers.providerReqs, globalBuffer: config.bufferPeriod, warn: warnings, ...(tasksFor && !root.blocks.driver?.length ? {} : { driver: drivers.label }) });
  return { config, ...(logLevel ? { logLevel } : {}), warnings };
}


/** CTS's `vault {}` (config/vault.go): enabled when an address is set (here or VAULT_ADDR). */
function vaultConfig(b: ReadBlock, warn: (b: ReadBlock, key: string, why: string) => void): VaultConfig | undefined {
  const a = b.attrs;
  if (a.enabled === false) return undefined;
  const out: VaultConfig = {};
  const str = (k: string) => (a[k] === undefined ? undefined : String(a[k]));
  const bool = (blk: ReadBlock, k: string): boolean | undefined => {
    const v = blk.attrs[k];
    if (v === undefined) return undefined;
    if (typeof v !== "boolean") throw configError(blk.file, blk.lines[k] ?? blk.line, `'${k}' must be true or false.`);
    return v;
  };
  if (str("address") !== undefined) out.address = str("address")!;
  if (str("token") !== undefined) out.token = str("token")!;
  if (str("namespace") !== undefined) out.namespace = str("namespace")!;
  if (str("vault_agent_token_file") !== undefined) out.agentTokenFile = str("vault_agent_token_file")!;
  const renew = bool(b, "renew_token");
  if (renew !== undefined) out.renewToken = renew;
  const unwrap = bool(b, "unwrap_token");
  if (unwrap !== undefined) out.unwrapToken = unwrap;
  const tls = one(b, "tls");
  if (tls && bool(tls, "enabled") !== false) {
    const t = tls.attrs;
    out.tls = tlsFileSettings(t, bool(tls, "verify"));
  }
  const transport = one(b, "transport");
  for (const k of Object.keys(transport?.attrs ?? {})) warn(transport!, k, "is accepted and has no effect: cts's Vault client pools connections itself.");
  return out;
}

/**
 * The labels of `high_availability { cluster { storage "…" } }`: CTS's reference documents "default",
 * its 0.7 announcement prints "consul"; both mean Consul KV, the only storage there is.
 */
const HA_STORAGE_LABELS = ["default", "consul"];

function highAvailability(ha: ReadBlock): HighAvailabilityConfig {
  const cluster = one(ha, "cluster");
  if (!cluster || typeof cluster.attrs.name !== "string") throw configError(ha.file, ha.line, "high_availability needs cluster { name = \"...\" }.");
  const storage = one(cluster, "storage");
  if (storage && !HA_STORAGE_LABELS.includes(storage.labels[0] ?? ""))
    throw configError(storage.file, storage.line, `storage "${storage.labels[0] ?? ""}" is not known. Use ${HA_STORAGE_LABELS.map((l) => `storage "${l}"`).join(" or ")}.`);
  const instance = one(ha, "instance");
  return {
    cluster: {
      name: cluster.attrs.name,
      ...(storage
        ? {
            storage: {
              ...(storage.attrs.parent_path !== undefined ? { parentPath: String(storage.attrs.parent_path) } : {}),
              ...(storage.attrs.namespace !== undefined ? { namespace: String(storage.attrs.namespace) } : {}),
              ...(storage.attrs.session_ttl !== undefined ? { sessionTtl: String(storage.attrs.session_ttl) } : {}),
            },
          }
        : {}),
    },
    ...(instance?.attrs.address !== undefined ? { instance: { address: String(instance.attrs.address) } } : {}),
  };
}

/** CTS's `syslog {}`: on when `enabled = true`, or (enabled unset) when facility or name is set. */
function ctsSyslog(b: ReadBlock | undefined): CtsConfig["syslog"] {
  if (!b) return undefined;
  const a = b.attrs;
  const on = a.enabled ?? (a.facility !== undefined || a.name !== undefined);
  if (on !== true) return undefined;
  if (a.facility !== undefined && syslogPriority(String(a.facility)) === undefined)
    throw configError(b.file, b.lines.facility ?? b.line, `syslog facility '${String(a.facility)}' is not known. Use one of ${Object.keys(SYSLOG_FACILITIES).join(", ")}.`);
  return { enabled: true, ...(a.facility !== undefined ? { facility: String(a.facility) } : {}), ...(a.name !== undefined ? { name: String(a.name) } : {}) };
}

/**
 * `consul { token }`: a plain token, or (cts only, CTS #825) a Vault secret's field,
 * `{{ with secret "secret/data/cts" }}{{ .Data.data.token }}{{ end }}`, read before the first call
 * to Consul and followed while cts runs (src/watch/consul-token.ts). `{{ env }}` is read now.
 */
function consulToken(b: ReadBlock, text: string): string | TemplateValue {
  if (!text.includes("{{")) return text;
  let v: string | TemplateValue;
  try {
    v = parseProviderTemplate(text, (name) => {
      const value = process.env[name] ?? "";
      if (value) redactSecret(value);
      return value;
    });
  } catch (err) {
    if (err instanceof TemplateSyntaxError) throw configError(b.file, b.lines.token ?? b.line, `consul.token: ${err.message}.`);
    throw err;
  }
  if (typeof v !== "string" && v.ctsTemplate.some((p) => typeof p !== "string" && "consulKey" in p))
    throw configError(b.file, b.lines.token ?? b.line, "consul.token cannot come from {{ key }}: cts needs the token to read Consul. Use {{ with secret \"…\" }} (a Vault secret), token_file, or CONSUL_HTTP_TOKEN.");
  return v;
}

/** CTS: "dynamic configuration using template syntax is only supported for terraform_provider blocks". */
function noTemplates(b: ReadBlock, inProvider = false, isTfcDriver = false, isConsul = false): void {
  const scan = (v: HclValue, key: string): void => {
    // A Terraform Cloud token may be {{ env "NAME" }} (drivers.ts reads it; CTS allows templates there).
    // cts only: the Consul token may come from Vault, `{{ with secret }}` (CTS #825; consulToken below).
    if (typeof v === "string" && v.includes("{{") && !inProvider && !(isTfcDriver && key === "token") && !(isConsul && key === "token"))
      throw configError(b.file, b.lines[key] ?? b.line, `'${key}' uses template syntax ({{ … }}), which CTS and cts only support in terraform_provider blocks.`);
    if (Array.isArray(v)) v.forEach((x) => scan(x, key));
    else if (isObject(v)) for (const x of Object.values(v)) scan(x, key);
  };
  for (const [k, v] of Object.entries(b.attrs)) scan(v, k);
  for (const [name, list] of Object.entries(b.blocks)) for (const c of list) noTemplates(c, inProvider || name === "terraform_provider", name === "driver" && c.labels[0] === "terraform-cloud", name === "consul" && !inProvider);
}

/** cts's own top-level `cts_history_keep` / `cts_history_max_age`: how long each task's run history is kept. */
function ctsHistory(root: ReadBlock): CtsConfig["history"] {
  const { cts_history_keep: keep, cts_history_max_age: maxAge } = root.attrs;
  if (keep === undefined && maxAge === undefined) return undefined;
  const out: NonNullable<CtsConfig["history"]> = {};
  if (keep !== undefined) {
    const n = typeof keep === "string" && /^\d+$/.test(keep) ? Number(keep) : keep;
    if (typeof n !== "number" || !Number.isInteger(n) || n < 1 || n > 1000) throw configError(root.file, root.lines.cts_history_keep!, `cts_history_keep must be a whole number from 1 to 1000 (got ${JSON.stringify(keep)}).`);
    out.keep = n;
  }
  if (maxAge !== undefined) {
    const ms = typeof maxAge === "string" ? parseDuration(maxAge) : undefined;
    if (ms === undefined || ms <= 0) throw configError(root.file, root.lines.cts_history_max_age!, `cts_history_max_age must be a positive duration such as "720h" (got ${JSON.stringify(maxAge)}).`);
    out.maxAge = maxAge as string;
  }
  return out;
}
