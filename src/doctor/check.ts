/** The outcome of one `cts doctor` check. */
export interface CheckResult {
  /** Short stable id: consul, consul-token (consul.token from Vault), reads:<task>, state, session, terraform, providers, working-dir, task-dir:<task>, working-dirs, api-port; with Terraform Cloud: tfc, tfc-token, tfc-organization, tfc-entitlements; with Vault: vault, vault-token, vault-read:<path>. */
  name: string;
  ok: boolean;
  /** What was found. */
  detail: string;
  /** How to fix it (failed checks only). */
  fix?: string;
}

/** A passed check. */
export const pass = (name: string, detail: string): CheckResult => ({ name, ok: true, detail });
/** A failed check with its fix. */
export const fail = (name: string, detail: string, fix: string): CheckResult => ({ name, ok: false, detail, fix });

/** One line per check: `✓ name: detail` or `✗ name: detail. Fix: …`. */
export function formatCheck(r: CheckResult): string {
  return r.ok ? `✓ ${r.name}: ${r.detail}` : `✗ ${r.name}: ${r.detail.replace(/\.$/, "")}. Fix: ${r.fix ?? "see the detail"}`;
}

export { doctorHint } from "../errors/cts-error.ts";
