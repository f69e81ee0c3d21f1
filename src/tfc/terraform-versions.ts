import { compareVersionParts, terraformVersionProblem } from "./supported-versions.ts";
import { many, nextPage } from "./jsonapi.ts";
import type { Transport } from "./transport.ts";

/** One Terraform version a Terraform Enterprise offers (`GET /api/v2/admin/terraform-versions`). */
export interface TerraformVersion {
  version: string;
  enabled: boolean;
  beta: boolean;
  deprecated: boolean;
}

/**
 * The Terraform versions the server offers, all pages; undefined when the token may not list them
 * (the admin API answers 404 to anyone but a Terraform Enterprise site admin, and HCP Terraform
 * has no such API for its users).
 */
export async function listTerraformVersions(t: Transport, signal?: AbortSignal): Promise<TerraformVersion[] | undefined> {
  const path = "/api/v2/admin/terraform-versions";
  const out: TerraformVersion[] = [];
  for (let page: number | undefined = 1; page !== undefined; ) {
    const doc = await t.json({ method: "GET", path, query: { "page[number]": String(page), "page[size]": "100" }, signal, idempotent: true, accept: [403, 404] });
    if (doc === undefined) return undefined;
    for (const r of many(doc, { method: "GET", path })) {
      const a = r.attributes as Record<string, unknown>;
      if (typeof a.version === "string") out.push({ version: a.version, enabled: a.enabled !== false, beta: a.beta === true, deprecated: a.deprecated === true });
    }
    page = nextPage(doc);
  }
  return out;
}

/**
 * The newest version a new workspace gets when its task names none (CTS: "the latest Terraform
 * version compatible with CTS available for the organization"): enabled, not beta, not
 * deprecated, an exact x.y.z within CTS's constraint. Undefined when none is.
 */
export function newestCompatibleVersion(versions: readonly TerraformVersion[]): string | undefined {
  let best: { text: string; parts: number[] } | undefined;
  for (const v of versions) {
    if (!v.enabled || v.beta || v.deprecated || terraformVersionProblem(v.version) !== undefined) continue;
    const parts = v.version.replace(/^v/, "").split(".").map(Number);
    if (!best || compareVersionParts(parts, best.parts) > 0) best = { text: v.version.replace(/^v/, ""), parts };
  }
  return best?.text;
}
