import { ApiError } from "../../api/http-error.ts";
import { checkBodyDepth } from "../../api/request-body.ts";
import { decodeVariables } from "./variables.ts";
import { isObject } from "../../values/is-object.ts";

/**
 * CTS's server decodes request JSON with Go's encoding/json (and mapstructure for PATCH), which
 * match keys to field names case-insensitively: CTS's own CLI sends `{"Enabled":false}` (a Go
 * struct without JSON tags). This renames such keys to our canonical spelling, level by level,
 * along the known shape; free maps (variables, metadata) keep their keys exactly as sent.
 */

/** A known object shape: each canonical key with the shape of its value (`free` = user keys). */
type Shape = { [key: string]: Shape | "leaf" | "free" };

const SERVICES: Shape = { names: "leaf", regexp: "leaf", datacenter: "leaf", namespace: "leaf", filter: "leaf", cts_user_defined_meta: "free", use_as_module_input: "leaf", peer: "leaf", partition: "leaf", sameness_group: "leaf" };
const CATALOG: Shape = { regexp: "leaf", datacenter: "leaf", namespace: "leaf", node_meta: "free", use_as_module_input: "leaf" };
const KV: Shape = { path: "leaf", recurse: "leaf", datacenter: "leaf", namespace: "leaf", use_as_module_input: "leaf" };
// cts's own blocks (CTS has none).
const NODES: Shape = { datacenter: "leaf", partition: "leaf", filter: "leaf", node_meta: "free", use_as_module_input: "leaf" };
const INTENTIONS: Shape = { destination: "leaf", datacenter: "leaf", namespace: "leaf", partition: "leaf", use_as_module_input: "leaf" };
const ENTRIES: Shape = { kind: "leaf", name: "leaf", datacenter: "leaf", namespace: "leaf", partition: "leaf", use_as_module_input: "leaf" };
const OWN = { nodes: NODES, intentions: INTENTIONS, config_entries: ENTRIES, "config-entries": ENTRIES };
const CONDITION: Shape = { services: SERVICES, catalog_services: CATALOG, "catalog-services": CATALOG, consul_kv: KV, "consul-kv": KV, ...OWN, schedule: { cron: "leaf" } };
const MODULE_INPUT: Shape = { services: SERVICES, consul_kv: KV, "consul-kv": KV, ...OWN };

/** A task as `POST /v1/tasks` takes it (and a PATCH body, whose keys are a subset plus `name`). */
export const TASK_SHAPE: Shape = {
  name: "leaf",
  module: "leaf",
  version: "leaf",
  description: "leaf",
  enabled: "leaf",
  providers: "leaf",
  variables: "free",
  condition: CONDITION,
  module_input: MODULE_INPUT,
  buffer_period: { enabled: "leaf", min: "leaf", max: "leaf" },
  origin: "leaf",
  terraform_cloud_workspace: { execution_mode: "leaf", agent_pool_id: "leaf", agent_pool_name: "leaf", terraform_version: "leaf" },
  terraform_version: "leaf",
  guards: { max_destroy: "leaf", max_destroy_percent: "leaf", never_empty: "leaf", approval: "leaf" },
  cts_allow_empty: "leaf",
  cts_outputs: "leaf",
  cts_sensitive_outputs: "leaf",
  cts_after: "leaf",
  // CTS fields we refuse with a hint: renamed so the hint applies whatever their case.
  services: "leaf",
  source: "leaf",
  source_input: "leaf",
  variable_files: "leaf",
};

/** `POST /v1/tasks`'s envelope. */
export const CREATE_SHAPE: Shape = { task: TASK_SHAPE };

/**
 * Renames keys that match a known key case-insensitively (as Go does) to the known spelling.
 * Two keys that fold to the same name are refused: Go would keep one silently, we say so.
 * Unknown keys stay as they are, so the schema names them.
 */
export function foldKeys(value: unknown, shape: Shape, at: string): unknown {
  if (!isObject(value)) return value;
  const byLower = new Map(Object.keys(shape).map((k) => [k.toLowerCase(), k]));
  const out: Record<string, unknown> = {};
  const seen = new Map<string, string>();
  for (const [key, v] of Object.entries(value)) {
    const canonical = key in shape ? key : (byLower.get(key.toLowerCase()) ?? key);
    const before = seen.get(canonical);
    if (before !== undefined)
      throw new ApiError(400, `${at ? `${at}.` : ""}${canonical.slice(0, 60)} is given twice (as '${before.slice(0, 60)}' and '${key.slice(0, 60)}'; keys match case-insensitively, as in CTS). Send it once.`);
    seen.set(canonical, key);
    const sub = shape[canonical];
    out[canonical] = sub && sub !== "leaf" && sub !== "free" ? foldKeys(v, sub, at ? `${at}.${canonical}` : canonical) : v;
  }
  return out;
}

/**
 * `POST /v1/tasks`'s body with keys folded and the task's variables decoded (both forms, see
 * variables.ts). A decoded HCL value may nest deeper than its text did: the depth limit holds for it too.
 */
export async function decodeCreateRequest(raw: unknown): Promise<unknown> {
  const body = foldKeys(raw, CREATE_SHAPE, "");
  if (!isObject(body) || !isObject(body.task)) return body;
  const task = foldKeys(body.task, TASK_SHAPE, "task") as Record<string, unknown>;
  if (task.variables === undefined) return { ...body, task };
  const decoded = { ...body, task: { ...task, variables: await decodeVariables(task.variables, "task.variables") } };
  checkBodyDepth(decoded);
  return decoded;
}

/** A PATCH body with keys folded and its variables decoded (within the depth limit, as for create). */
export async function decodePatchRequest(raw: unknown): Promise<unknown> {
  const body = foldKeys(raw, TASK_SHAPE, "");
  if (!isObject(body) || body.variables === undefined || body.variables === null) return body;
  const decoded = { ...body, variables: await decodeVariables(body.variables, "variables") };
  checkBodyDepth(decoded);
  return decoded;
}
