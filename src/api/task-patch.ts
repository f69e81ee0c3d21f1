import { ApiError } from "./http-io.ts";
import { isObject, show } from "./task-request.ts";

type Json = Record<string, unknown>;

/** Fields PATCH may change on a task created through the API (beyond CTS, which allows only `enabled`). */
export const PATCHABLE_FIELDS = ["enabled", "description", "module", "version", "variables", "condition", "module_input", "buffer_period"];

/** What a PATCH body asks: `enabled`, and (beyond CTS) replacement fields for API-created tasks. */
export interface PatchRequest {
  enabled?: boolean;
  /** Top-level fields to replace, in CTS's shape; `null` removes an optional field. */
  changes: Json;
}

/** Parses `PATCH /v1/tasks/{name}`'s body. */
export function parsePatchBody(body: unknown, task: string): PatchRequest {
  if (!isObject(body)) throw new ApiError(400, `the request body must be a JSON object like {"enabled":true} (got ${show(body)}).`);
  const unknown = Object.keys(body).filter((k) => !PATCHABLE_FIELDS.includes(k) && k !== "name");
  if (unknown.length) throw new ApiError(400, `the request body has unsupported keys: ${unknown.join(", ")}. PATCH takes: ${PATCHABLE_FIELDS.join(", ")}.`);
  if (body.name !== undefined && body.name !== task) throw new ApiError(400, `a task cannot be renamed ('${task}' → '${String(body.name).slice(0, 60)}'). Create a new task instead.`);
  if (body.enabled !== undefined && typeof body.enabled !== "boolean") throw new ApiError(400, `enabled must be true or false (got ${show(body.enabled)}).`);
  const changes: Json = {};
  for (const k of PATCHABLE_FIELDS) if (k !== "enabled" && k in body) changes[k] = body[k];
  if (body.enabled === undefined && Object.keys(changes).length === 0) throw new ApiError(400, `the request body changes nothing. Send {"enabled":true} or {"enabled":false}.`);
  for (const [k, v] of Object.entries(changes)) if (v === null && (k === "module" || k === "condition")) throw new ApiError(400, `${k} cannot be removed (it is required).`);
  return { ...(typeof body.enabled === "boolean" ? { enabled: body.enabled } : {}), changes };
}

/** The spec a PATCH makes: the current spec in CTS's shape, with the changed fields replaced. */
export function patchedTask(current: Json, patch: PatchRequest): Json {
  const merged: Json = { ...current };
  for (const [k, v] of Object.entries(patch.changes)) {
    if (v === null) delete merged[k];
    else merged[k] = v;
  }
  if (patch.enabled !== undefined) merged.enabled = patch.enabled;
  return merged;
}
