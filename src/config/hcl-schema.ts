import { CtsError } from "../errors/cts-error.ts";
import type { HclBlock, HclBody, HclValue } from "./hcl.ts";
import { isObject } from "../values/is-object.ts";

/**
 * The keys of a CTS v0.9.0 configuration file, block by block (CTS-SOURCE-NOTES §1). Reading a
 * file against it turns HCL blocks (or HCL v1's / JSON's `block = { … }` form of them) into plain
 * objects, and names the file and line of any key CTS itself would refuse.
 */
export interface BlockSchema {
  attrs?: string[];
  blocks?: Record<string, BlockSchema>;
  /** Number of labels (`driver "terraform"`: 1). Labelled blocks read as `{ label: body }`. */
  labels?: number;
  /** May appear more than once (tasks, providers, conditions by label). */
  repeat?: boolean;
  /** Any attribute is allowed (provider arguments, backend settings, maps). */
  open?: boolean;
  /** The whole block is CTS Enterprise only (licensing). */
  enterprise?: boolean;
}

const BUFFER: BlockSchema = { attrs: ["enabled", "min", "max"] };
const SERVICES_Q = ["names", "regexp", "datacenter", "namespace", "filter", "cts_user_defined_meta"];
const KV_Q = ["path", "recurse", "datacenter", "namespace"];
/** cts's own (CTS has none): a services query's peer, partition and sameness group; the nodes, intentions and config-entries blocks' keys. */
const CTS_Q = ["peer", "partition", "sameness_group", "destination", "kind", "name"];
const CONDITION: BlockSchema = {
  labels: 1,
  repeat: true,
  // cts_trigger is cts's own (CTS has none): which changes of a services condition run the task.
  attrs: [...new Set([...SERVICES_Q, ...KV_Q, ...CTS_Q, "node_meta", "cron", "use_as_module_input", "source_includes_var", "cts_trigger"])],
};
/** cts's own block (not CTS's): plan guards, in a task or for every task. */
const GUARDS: BlockSchema = { attrs: ["max_destroy", "max_destroy_percent", "never_empty", "approval"] };
/** cts's own block (not CTS's): webhooks, for every task or in a task (src/cts/config/notifications.ts). */
const NOTIFICATIONS: BlockSchema = {
  attrs: ["link", "queue_size"],
  blocks: { webhook: { labels: 1, repeat: true, attrs: ["url", "format", "events", "tasks", "secret", "secret_env", "timeout", "retries"] } },
};
const MODULE_INPUT: BlockSchema = { labels: 1, repeat: true, attrs: [...new Set([...SERVICES_Q, ...KV_Q, ...CTS_Q, "node_meta"])] };

/** Keys of `driver "terraform"` and of `driver "terraform-cloud"` (CTS-SOURCE-NOTES §1.3, CTS-TFC-NOTES §1). */
export const TERRAFORM_DRIVER_KEYS = ["version", "path", "log", "persist_log", "backend"];
export const TFC_DRIVER_KEYS = ["hostname", "organization", "token", "workspace_prefix", "workspaces", "tls"];

/** The top level of a CTS config file. */
export const CTS_SCHEMA: BlockSchema = {
  // cts_history_*: cts's own (not CTS's): how long each task's run history is kept.
  attrs: ["log_level", "port", "working_dir", "id", "client_type", "license_path", "cts_history_keep", "cts_history_max_age"],
  blocks: {
    syslog: { attrs: ["enabled", "facility", "name"] },
    buffer_period: BUFFER,
    guards: GUARDS,
    notifications: NOTIFICATIONS,
    tls: { attrs: ["enabled", "cert", "key", "verify_incoming", "ca_cert", "ca_path"] },
    consul: {
      attrs: ["address", "token", "kv_path", "kv_namespace"],
      blocks: {
        auth: { attrs: ["enabled", "username", "password"] },
        tls: { attrs: ["enabled", "verify", "ca_cert", "ca_path", "cert", "key", "server_name"] },
        transport: { attrs: ["dial_keep_alive", "dial_timeout", "disable_keep_alives", "idle_conn_timeout", "max_idle_conns", "max_idle_conns_per_host", "tls_handshake_timeout"] },
        service_registration: { attrs: ["enabled", "service_name", "address", "namespace"], blocks: { default_check: { attrs: ["enabled", "address"] } } },
      },
    },
    vault: {
      attrs: ["address", "enabled", "namespace", "token", "vault_agent_token_file", "renew_token", "unwrap_token"],
      blocks: {
        tls: { attrs: ["enabled", "ca_cert", "ca_path", "cert", "key", "server_name", "verify"] },
        transport: { attrs: ["dial_keep_alive", "dial_timeout", "disable_keep_alives", "idle_conn_timeout", "max_idle_conns", "max_idle_conns_per_host", "tls_handshake_timeout"] },
      },
    },
    // Both drivers' keys; drivers.ts refuses the other driver's keys under each label.
    driver: {
      labels: 1,
      repeat: true,
      attrs: [...TERRAFORM_DRIVER_KEYS, ...TFC_DRIVER_KEYS],
      blocks: {
        backend: { labels: 1, open: true },
        required_providers: { open: true },
        workspaces: { attrs: ["prefix", "tags", "tags_allowlist", "tags_denylist"] },
        tls: { attrs: ["enabled", "ca_cert", "ca_path", "cert", "key", "server_name", "verify"] },
      },
    },
    terraform_provider: { labels: 1, repeat: true, open: true },
    task: {
      repeat: true,
      attrs: ["name", "description", "enabled", "module", "source", "version", "providers", "variable_files", "variables", "working_dir", "services", "terraform_version", "cts_allow_empty", "cts_outputs", "cts_sensitive_outputs", "cts_after"],
      blocks: { condition: CONDITION, module_input: MODULE_INPUT, source_input: MODULE_INPUT, buffer_period: BUFFER, guards: GUARDS, notifications: NOTIFICATIONS, terraform_cloud_workspace: { attrs: ["execution_mode", "agent_pool_id", "agent_pool_name", "terraform_version"] } },
    },
    service: { repeat: true, attrs: ["name", "id", "description", "datacenter", "namespace", "filter", "cts_user_defined_meta"] },
    high_availability: {
      blocks: {
        cluster: { attrs: ["name"], blocks: { storage: { labels: 1, attrs: ["parent_path", "namespace", "session_ttl"] } } },
        instance: { attrs: ["address"] },
      },
    },
    license: { open: true, enterprise: true },
  },
};

/** A block read against the schema: attributes by name, sub-blocks by name (lists for repeatable ones). */
export interface ReadBlock {
  file: string;
  line: number;
  labels: string[];
  attrs: Record<string, HclValue>;
  /** Line of each attribute, for errors found later. */
  lines: Record<string, number>;
  blocks: Record<string, ReadBlock[]>;
}

/** `<file>:<line>: message` as a CONFIG_INVALID error. */
export function configError(file: string, line: number, message: string): CtsError {
  return new CtsError("CONFIG_INVALID", "usage", `${file}:${line}: ${message}`);
}

/** Reads one body against a block schema; `path` names the block in messages (`consul.tls`). */
export function readBlock(body: HclBody, schema: BlockSchema, file: string, line: number, labels: string[], path: string): ReadBlock {
  const out: ReadBlock = { file, line, labels, attrs: {}, lines: {}, blocks: {} };
  const add = (name: string, child: ReadBlock, childSchema: BlockSchema, at: number) => {
    const list = (out.blocks[name] ??= []);
    const sameLabel = list.some((b) => b.labels.join(".") === child.labels.join("."));
    if (!childSchema.repeat && list.length) throw configError(file, at, `only one '${[path, name].filter(Boolean).join(".")}' block can be configured.`);
    if (childSchema.repeat && childSchema.labels && sameLabel && name !== "terraform_provider")
      throw configError(file, at, `'${name} "${child.labels.join('" "')}"' is configured twice in ${path || "the file"}.`);
    list.push(child);
  };
  for (const [written, { value, line: at }] of body.attributes) {
    const key = canonicalKey(schema, written);
    const sub = schema.blocks?.[key];
    if (sub) {
      // HCL v1 and JSON write blocks as attributes: `consul = { … }`, `task = [{ … }]`, `driver = { terraform = { … } }`.
      for (const [labelsOf, v] of blockValues(value, sub.labels ?? 0, file, at, key)) add(key, enterpriseCheck(readBlock(objectBody(v, at, file, key), sub, file, at, labelsOf, join(path, key)), sub, key), sub, at);
    } else if (schema.open || schema.attrs?.includes(key)) {
      out.attrs[key] = value;
      out.lines[key] = at;
    } else throw unknownKey(file, at, key, path, schema);
  }
  for (const written of body.blocks) {
    const b = { ...written, type: canonicalKey(schema, written.type) };
    const sub = schema.blocks?.[b.type];
    if (!sub && mapAttrBlock(b, schema, out, file, path)) continue;
    if (!sub) {
      if (schema.open) {
        out.attrs[b.type] = bodyToValue(b.body);
        out.lines[b.type] = b.line;
        continue;
      }
      throw unknownKey(file, b.line, b.type, path, schema);
    }
    if (b.labels.length !== (sub.labels ?? 0))
      throw configError(file, b.line, `'${join(path, b.type)}' takes ${sub.labels ? `${sub.labels} label (e.g. ${b.type} "name" { … })` : "no label"}, got ${b.labels.length}.`);
    add(b.type, enterpriseCheck(readBlock(b.body, sub, file, b.line, b.labels, join(path, b.type)), sub, b.type), sub, b.line);
  }
  return out;
}

/**
 * CTS's decoder (mapstructure) matches a key to its option whatever the case (`LOG_LEVEL`,
 * `Consul`): a key of a fixed block is read as the option it spells. Open blocks (provider
 * arguments, backend settings, maps) keep their keys as written.
 */
function canonicalKey(schema: BlockSchema, key: string): string {
  if (schema.open || schema.attrs?.includes(key) || schema.blocks?.[key]) return key;
  const lower = key.toLowerCase();
  return [...(schema.attrs ?? []), ...Object.keys(schema.blocks ?? {})].find((k) => k.toLowerCase() === lower) ?? key;
}

/**
 * HCL 1 reads `name { k = "v" }` as `name = { k = "v" }`: a map-valued key (cts_user_defined_meta,
 * node_meta) may be written as a block without labels. True when `b` was such a key.
 */
function mapAttrBlock(b: HclBlock, schema: BlockSchema, out: ReadBlock, file: string, path: string): boolean {
  if (!schema.attrs?.includes(b.type) || b.labels.length) return false;
  if (b.type in out.attrs) throw configError(file, b.line, `'${join(path, b.type)}' is set twice.`);
  out.attrs[b.type] = bodyToValue(b.body);
  out.lines[b.type] = b.line;
  return true;
}

function enterpriseCheck(b: ReadBlock, schema: BlockSchema, name: string): ReadBlock {
  if (schema.enterprise) throw configError(b.file, b.line, `'${name}' is a CTS Enterprise feature (licensing) that cts does not need. Remove it.`);
  return b;
}

const join = (path: string, key: string) => (path ? `${path}.${key}` : key);

function unknownKey(file: string, line: number, key: string, path: string, schema: BlockSchema): CtsError {
  const known = [...(schema.attrs ?? []), ...Object.keys(schema.blocks ?? {})];
  return configError(file, line, `'${key}' is not a valid key${path ? ` in ${path}` : ""} (CTS: invalid key). Valid keys: ${known.join(", ")}.`);
}

/** The bodies (with labels) an attribute-form block holds: `{…}`, `[{…}]`, or `{ label = {…} }` per label level. */
function blockValues(value: HclValue, labels: number, file: string, line: number, key: string): Array<[string[], HclValue]> {
  const list = Array.isArray(value) ? value : [value];
  const out: Array<[string[], HclValue]> = [];
  for (const item of list) {
    if (labels === 0) out.push([[], item]);
    else {
      if (!isObject(item)) throw configError(file, line, `'${key}' must be an object keyed by its label, e.g. ${key} = { name = { … } }.`);
      for (const [label, inner] of Object.entries(item)) for (const [rest, v] of blockValues(inner, labels - 1, file, line, key)) out.push([[label, ...rest], v]);
    }
  }
  return out;
}

function objectBody(v: HclValue, line: number, file: string, key: string): HclBody {
  if (Array.isArray(v) && v.length === 1) v = v[0]!;
  if (!isObject(v)) throw configError(file, line, `'${key}' must be a block ({ … }).`);
  return { attributes: new Map(Object.entries(v).map(([k, x]) => [k, { value: x, line }])), blocks: [] };
}

/** A block inside an open block (a backend's nested block, a provider's `assume_role {}`) as a value. */
export function bodyToValue(body: HclBody): { [k: string]: HclValue } {
  const out: { [k: string]: HclValue } = {};
  for (const [k, v] of body.attributes) out[k] = v.value;
  for (const b of body.blocks) {
    let target = out;
    for (const l of [b.type, ...b.labels.slice(0, -1)]) target = (target[l] ??= {}) as { [k: string]: HclValue };
    const last = b.labels.length ? b.labels[b.labels.length - 1]! : undefined;
    if (last === undefined) out[b.type] = bodyToValue(b.body);
    else target[last] = bodyToValue(b.body);
  }
  return out;
}
