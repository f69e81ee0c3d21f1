import { z } from "zod";
import { ApiError } from "./http-error.ts";
import { flag, problemsOf, show, whenObject } from "./schema-messages.ts";
import { decodeCtsJson } from "./task-schema.ts";
import { suggestKey } from "../errors/unknown-options.ts";

type Json = Record<string, unknown>;

/** A field a patch may remove with `null`: it falls back to its default. */
const removable = () => z.unknown().optional();
/** A field every task needs: a patch may replace it, not remove it. */
const required = () => z.unknown().refine((v) => v !== null, { error: "cannot be removed (it is required)." }).optional();

/**
 * What PATCH may change on a task created through the API (beyond CTS, which allows only
 * `enabled`). The values are checked when the patched task is parsed as a whole (parseTask).
 */
const patchFields = {
  enabled: flag().optional(),
  description: removable(),
  module: required(),
  version: removable(),
  variables: removable(),
  condition: required(),
  module_input: removable(),
  buffer_period: removable(),
  /** cts's own: task chains, checked against the daemon's tasks like a created task's. */
  cts_after: removable(),
};

/** Fields PATCH may change on a task created through the API (beyond CTS, which allows only `enabled`). */
export const PATCHABLE_FIELDS = Object.keys(patchFields);

/** An unknown key, with the known one it was probably meant to be: "enabeld (did you mean `enabled`?)". */
function withMeant(key: string, known: readonly string[]): string {
  const meant = suggestKey(key, known);
  return `${key.slice(0, 60)}${meant ? ` (did you mean \`${meant}\`?)` : ""}`;
}

/** `PATCH /v1/tasks/{task}`'s body: the whole-body problems are checked beside the field ones. */
function patchBodySchema(task: string) {
  return z
    .looseObject(patchFields, { error: (iss) => `the request body must be a JSON object like {"enabled":true} (got ${show(iss.input)}).` })
    .superRefine((body, ctx) => {
      const unknown = Object.keys(body).filter((k) => !PATCHABLE_FIELDS.includes(k) && k !== "name");
      const problem = unknown.length
        ? `the request body has unsupported keys: ${unknown.map((k) => withMeant(k, PATCHABLE_FIELDS)).join(", ")}. PATCH takes: ${PATCHABLE_FIELDS.join(", ")}.`
        : body.name !== undefined && body.name !== task
          ? `a task cannot be renamed ('${task}' → '${String(body.name).slice(0, 60)}'). Create a new task instead.`
          : Object.keys(body).every((k) => k === "name")
            ? `the request body changes nothing. Send {"enabled":true} or {"enabled":false}.`
            : undefined;
      if (problem) ctx.addIssue({ code: "custom", path: [], message: problem });
    }, whenObject)
    .transform(({ enabled, ...rest }) => ({
      ...(enabled !== undefined ? { enabled } : {}),
      /** Top-level fields to replace, in CTS's shape; `null` removes an optional field. */
      changes: Object.fromEntries(Object.entries(rest).filter(([k]) => k !== "enabled" && PATCHABLE_FIELDS.includes(k))) as Json,
    }));
}

/** What a PATCH body asks: `enabled`, and (beyond CTS) replacement fields for API-created tasks. */
export type PatchRequest = z.output<ReturnType<typeof patchBodySchema>>;

/** Parses `PATCH /v1/tasks/{name}`'s body; 400 naming every problem. */
export function parsePatchBody(body: unknown, task: string): PatchRequest {
  const parsed = patchBodySchema(task).safeParse(decodeCtsJson(body, ""));
  if (!parsed.success) throw new ApiError(400, problemsOf(parsed.error.issues, "").join(" "));
  return parsed.data;
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
