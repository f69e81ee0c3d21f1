import type { Hono } from "hono";
import { document, type Env, notFound, paginate, type ServerContext } from "../jsonapi.ts";
import type { TerraformVersion } from "../model.ts";

/** A Terraform version as the admin API shows it. */
function terraformVersionResource(v: TerraformVersion) {
  return {
    id: v.id,
    type: "terraform-versions",
    attributes: {
      version: v.version,
      url: `https://releases.hashicorp.com/terraform/${v.version}/terraform_${v.version}_linux_amd64.zip`,
      sha: "0".repeat(64),
      deprecated: v.deprecated,
      "deprecated-reason": v.deprecated ? "no longer offered" : null,
      official: v.official,
      enabled: v.enabled,
      beta: v.beta,
      usage: 0,
      "created-at": "2026-01-01T00:00:00.000Z",
    },
  };
}

/**
 * Terraform Enterprise's admin API, the part a driver reads: `GET /admin/terraform-versions`
 * (pages; `filter[version]` exact, `search[version]` a substring). Only a site admin's token is
 * answered; anyone else gets 404, as TFE answers ("Client is not an administrator") and as HCP
 * Terraform, which has no admin API, does.
 */
export function adminRoutes(app: Hono<Env>, ctx: ServerContext): void {
  app.get("/api/v2/admin/terraform-versions", (c) => {
    if (!c.get("grant")?.siteAdmin) throw notFound();
    const exact = c.req.query("filter[version]");
    const part = c.req.query("search[version]");
    const versions = ctx.store.terraformVersions.filter((v) => (exact === undefined || v.version === exact) && (part === undefined || v.version.includes(part)));
    return document(c, paginate(c, versions.map(terraformVersionResource)));
  });
}
