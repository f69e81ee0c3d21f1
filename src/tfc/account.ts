import { one } from "./jsonapi.ts";
import type { Transport } from "./transport.ts";
import { enc } from "./workspaces.ts";

/** Who the token belongs to (GET /account/details). */
export interface AccountDetails {
  id: string;
  username: string | undefined;
  /** A team token's account (TFC answers with the team's service account). */
  serviceAccount: boolean;
}

/**
 * The token's account and the organization's entitlements: what `cts doctor` asks before any
 * workspace is touched. Both are plain reads; neither changes anything in Terraform Cloud.
 */
export class Account {
  constructor(private readonly t: Transport) {}

  /** The token's account, or undefined when the server has none for it (404: an organization token). */
  async details(signal?: AbortSignal): Promise<AccountDetails | undefined> {
    const path = "/api/v2/account/details";
    const doc = await this.t.json({ method: "GET", path, signal, idempotent: true, accept: [404] });
    if (doc === undefined) return undefined;
    const r = one(doc, { method: "GET", path });
    return { id: r.id, username: typeof r.attributes.username === "string" ? r.attributes.username : undefined, serviceAccount: r.attributes["is-service-account"] === true };
  }

  /**
   * The organization's entitlements (`operations`, `agents`, `state-storage`…) as booleans, or
   * undefined when the server does not offer the entitlement set (404: some Terraform Enterprise versions).
   */
  async entitlements(organization: string, signal?: AbortSignal): Promise<Record<string, boolean> | undefined> {
    const path = `/api/v2/organizations/${enc(organization)}/entitlement-set`;
    const doc = await this.t.json({ method: "GET", path, signal, idempotent: true, accept: [404] });
    if (doc === undefined) return undefined;
    const r = one(doc, { method: "GET", path });
    return Object.fromEntries(Object.entries(r.attributes).filter(([, v]) => typeof v === "boolean")) as Record<string, boolean>;
  }
}
