import { configError, type ReadBlock } from "../../config/hcl-schema.ts";
import type { HclValue } from "../../config/hcl.ts";

// CTS decodes its config with mapstructure's weak typing (config/config.go: WeaklyTypedInput):
// `enabled = "true"`, `port = "8558"` or `id = 7` load as if written with their types. cts reads
// them the same way, key by key, before mapping the config. Paths are block names from the top
// (`task.condition.recurse`); a labelled block's path leaves its label out.

const BOOLS = new Set([
  "syslog.enabled", "buffer_period.enabled", "tls.enabled", "tls.verify_incoming",
  "consul.auth.enabled", "consul.tls.enabled", "consul.tls.verify", "consul.transport.disable_keep_alives",
  "consul.service_registration.enabled", "consul.service_registration.default_check.enabled",
  "driver.log", "driver.persist_log",
  "task.enabled", "task.buffer_period.enabled", "task.condition.recurse", "task.condition.use_as_module_input", "task.condition.source_includes_var",
  "task.module_input.recurse", "task.source_input.recurse",
]);
/** Lists: a single value is read as a list of one (mapstructure's weak typing). */
const LISTS = new Set(["task.providers", "task.variable_files", "task.services", "task.condition.names", "task.module_input.names", "task.source_input.names"]);
const INTS = new Set(["port", "consul.transport.max_idle_conns", "consul.transport.max_idle_conns_per_host"]);
const STRINGS = new Set([
  "log_level", "working_dir", "id", "syslog.facility", "syslog.name", "buffer_period.min", "buffer_period.max",
  "tls.cert", "tls.key", "tls.ca_cert", "tls.ca_path",
  "consul.address", "consul.token", "consul.kv_path", "consul.kv_namespace", "consul.auth.username", "consul.auth.password",
  "consul.tls.ca_cert", "consul.tls.ca_path", "consul.tls.cert", "consul.tls.key", "consul.tls.server_name",
  "consul.service_registration.service_name", "consul.service_registration.address", "consul.service_registration.namespace",
  "consul.service_registration.default_check.address", "driver.version", "driver.path",
  "task.name", "task.description", "task.module", "task.source", "task.version", "task.buffer_period.min", "task.buffer_period.max",
  ...["condition", "module_input", "source_input"].flatMap((b) => ["regexp", "datacenter", "namespace", "filter", "path", "cron"].map((k) => `task.${b}.${k}`)),
  ...["name", "id", "description", "datacenter", "namespace", "filter"].map((k) => `service.${k}`),
]);

/** Go's strconv.ParseBool. */
const GO_BOOLS: Record<string, boolean> = { "1": true, t: true, T: true, TRUE: true, true: true, True: true, "0": false, f: false, F: false, FALSE: false, false: false, False: false };

function weak(kind: "bool" | "int" | "string" | "list", v: HclValue, fail: (why: string) => never): HclValue {
  if (kind === "list") return Array.isArray(v) || v === null ? v : [v];
  if (kind === "bool") {
    if (typeof v === "boolean") return v;
    if (typeof v === "number") return v !== 0;
    if (typeof v === "string") return v === "" ? false : (GO_BOOLS[v] ?? fail(`'${v}' is not a boolean. Write true or false.`));
  } else if (kind === "int") {
    if (typeof v === "number") return Math.trunc(v);
    if (typeof v === "boolean") return v ? 1 : 0;
    if (typeof v === "string") return /^[+-]?\d+$/.test(v.trim()) ? Number(v) : fail(`'${v}' is not a whole number.`);
  } else {
    if (typeof v === "string") return v;
    if (typeof v === "boolean") return v ? "1" : "0";
    if (typeof v === "number") return String(v);
  }
  return v;
}

/** Converts, in place, the values of keys CTS reads with weak typing; refuses what mapstructure refuses. */
export function weaklyTyped(b: ReadBlock, path = ""): ReadBlock {
  for (const [key, value] of Object.entries(b.attrs)) {
    const p = path ? `${path}.${key}` : key;
    const kind = BOOLS.has(p) ? "bool" : INTS.has(p) ? "int" : STRINGS.has(p) ? "string" : LISTS.has(p) ? "list" : undefined;
    if (kind) b.attrs[key] = weak(kind, value, (why) => { throw configError(b.file, b.lines[key] ?? b.line, `'${p}' ${why}`); });
  }
  for (const [name, list] of Object.entries(b.blocks)) for (const child of list) weaklyTyped(child, path ? `${path}.${name}` : name);
  return b;
}
