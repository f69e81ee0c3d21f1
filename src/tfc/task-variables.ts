import { createHash } from "node:crypto";
import type { TfcClient } from "./client.ts";
import type { VariableInput } from "./types.ts";

/** The description cts gives the variables it manages (only those are ever deleted by cts). */
export const MANAGED_DESCRIPTION = "Set by cts; changed on each run";

/**
 * A task's environment as workspace variables. `TF_VAR_<name>` (a module task's provider values, a
 * task's secrets) becomes the terraform variable `<name>`: HCL when the configuration declares it
 * with a type other than string (a provider's object), a plain string otherwise. Anything else
 * (CTS's `task_env`) becomes an env variable. All are sensitive: TFC never shows them again.
 */
export function taskVariables(env: Record<string, string> | undefined, json: string): VariableInput[] {
  let declared: Record<string, { type?: unknown }> = {};
  try {
    declared = (JSON.parse(json) as { variable?: Record<string, { type?: unknown }> }).variable ?? {};
  } catch {
    /* not JSON: every value is a string */
  }
  const out: VariableInput[] = [];
  for (const [key, value] of Object.entries(env ?? {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    if (key.startsWith("TF_VAR_") && key.length > 7) {
      const name = key.slice(7);
      const type = declared[name]?.type;
      const hcl = typeof type === "string" && type !== "string" && type !== "${string}";
      out.push({ key: name, value, category: "terraform", hcl, sensitive: true, description: MANAGED_DESCRIPTION });
    } else out.push({ key, value, category: "env", hcl: false, sensitive: true, description: MANAGED_DESCRIPTION });
  }
  return out;
}

/** A fingerprint of the variables (values included), kept only in memory, to skip writing unchanged ones. */
export function variablesFingerprint(vars: VariableInput[]): string {
  const h = createHash("sha256");
  for (const v of vars) h.update(`${v.category}\0${v.key}\0${v.hcl ? 1 : 0}\0${v.value}\0`);
  return h.digest("hex");
}

/**
 * Makes the workspace's variables match: each is created or updated, and variables cts set before
 * (by their description) that the task no longer has are deleted. Variables set by people are
 * left alone unless the task sets the same key.
 */
export async function syncVariables(client: TfcClient, workspaceId: string, vars: VariableInput[], signal?: AbortSignal): Promise<void> {
  const existing = await client.variables.list(workspaceId, signal);
  const wanted = new Set(vars.map((v) => `${v.category}\0${v.key}`));
  for (const v of vars) {
    const same = existing.find((e) => e.key === v.key && e.category === v.category);
    if (same) await client.variables.update(workspaceId, same.id, v, signal);
    else await client.variables.set(workspaceId, v, signal);
  }
  for (const e of existing) if (e.description === MANAGED_DESCRIPTION && !wanted.has(`${e.category}\0${e.key}`)) await client.variables.delete(workspaceId, e.id, signal);
}
