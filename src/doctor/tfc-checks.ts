import { resolveTerraformCloudToken, terraformCloudSettings } from "../config/terraform-cloud.ts";
import type { TerraformCloudDriverConfig } from "../config/types.ts";
import { messageOf } from "../errors/cts-error.ts";
import { knownSecrets } from "../secrets/redactor.ts";
import type { TerraformCloudWorkspaceOption } from "../task/task.ts";
import { TfcClient } from "../tfc/client.ts";
import { fail, pass, type CheckResult } from "./check.ts";

/** What the Terraform Cloud checks need: the driver settings, the config's directory, the tasks' workspace settings. */
export interface TfcDoctorInput {
  driver: TerraformCloudDriverConfig;
  dir: string;
  workspaces: Array<{ task: string; workspace: TerraformCloudWorkspaceOption | undefined }>;
  env?: NodeJS.ProcessEnv;
  /** Client options for tests (short retries). */
  retry?: { attempts?: number; baseDelayMs?: number; maxDelayMs?: number };
}

const TOKEN_FIX = "set a valid team API token in TFC_TOKEN (or the driver's token); create one under the team's settings → Team API token";
const NOT_CHECKED = (what: string) => `not checked: ${what}`;

/**
 * `cts doctor` for the Terraform Cloud driver, in order: the server answers over HTTP(S)/TLS
 * (`tfc`), the token is accepted (`tfc-token`, GET /account/details), the organization exists
 * and the token sees it (`tfc-organization`), and its entitlements allow remote runs and, when a
 * task asks for them, agents (`tfc-entitlements`). Each later check is skipped when an earlier
 * one fails. No detail or fix carries the token (every text passes the redactor).
 */
export async function checkTerraformCloud(input: TfcDoctorInput): Promise<CheckResult[]> {
  const out: CheckResult[] = [];
  const env = input.env ?? process.env;
  const settings = terraformCloudSettings(input.driver, env);
  const add = (r: CheckResult) => out.push({ ...r, detail: knownSecrets.redact(r.detail), ...(r.fix ? { fix: knownSecrets.redact(r.fix) } : {}) });
  const skipRest = (why: string, names: string[]) => names.forEach((n) => add(fail(n, NOT_CHECKED(why), `fix the ${out.find((r) => !r.ok)?.name ?? "tfc"} check first`)));

  let token: string;
  try {
    token = resolveTerraformCloudToken(input.driver, input.dir, env);
  } catch (err) {
    add(fail("tfc-token", messageOf(err), TOKEN_FIX));
    return out;
  }
  let client: TfcClient;
  try {
    client = new TfcClient({ hostname: settings.hostname, token, ...(input.driver.tls ? { tls: input.driver.tls } : {}), retry: { attempts: 2, ...input.retry }, requestTimeoutMs: 10_000 });
  } catch (err) {
    add(fail("tfc", messageOf(err), "fix driver \"terraform-cloud\" tls (driver.terraformCloud.tls): the CA, certificate and key must be readable PEM files"));
    return out;
  }
  try {
    const host = client.origin;
    const tls = host.startsWith("https:") ? (input.driver.tls?.verify === false ? ", TLS without verifying the certificate" : ", TLS verified") : ", plain HTTP";
    try {
      const { apiVersion } = await client.ping();
      add(pass("tfc", `${host} answers (API version ${apiVersion ?? "not given"}${tls})`));
    } catch (err) {
      const code = (err as { code?: string }).code;
      add(
        fail(
          "tfc",
          messageOf(err),
          code === "TFC_TLS_FAILED"
            ? "give the server's CA in the driver's tls { ca_cert } (driver.terraformCloud.tls.caCert) and, when the certificate names another host, tls { server_name }"
            : code === "TFC_UNREACHABLE"
              ? "check hostname (or TFC_HOSTNAME) and that this machine reaches it (proxy, firewall, DNS)"
              : "check that hostname points at Terraform Cloud or Enterprise",
        ),
      );
      skipRest("Terraform Cloud does not answer", ["tfc-token", "tfc-organization", "tfc-entitlements"]);
      return out;
    }

    try {
      const account = await client.account.details();
      add(
        pass(
          "tfc-token",
          account
            ? `accepted (${account.serviceAccount ? "a team token" : "a user token"}${account.username ? `, account '${account.username}'` : ""})`
            : "accepted, but it belongs to no account (an organization token?): Terraform Cloud lets only user and team tokens start runs; CTS uses a team token",
        ),
      );
    } catch (err) {
      add(fail("tfc-token", messageOf(err), TOKEN_FIX));
      skipRest("the token was refused", ["tfc-organization", "tfc-entitlements"]);
      return out;
    }

    const org = settings.organization;
    try {
      await client.organization(org);
      add(pass("tfc-organization", `'${org}' exists and the token sees it`));
    } catch (err) {
      const code = (err as { code?: string }).code;
      add(
        fail(
          "tfc-organization",
          code === "TFC_NOT_FOUND" ? `organization '${org}' does not exist at ${host}, or the token may not see it` : messageOf(err),
          code === "TFC_NOT_FOUND" || code === "TFC_FORBIDDEN"
            ? "check organization (or TFC_ORGANIZATION) against the organization's name in Terraform Cloud, and use a token of a team in that organization"
            : "see the detail",
        ),
      );
      skipRest("the organization is not reachable", ["tfc-entitlements"]);
      return out;
    }

    try {
      const ent = await client.account.entitlements(org);
      add(entitlementsCheck(ent, input.workspaces));
    } catch (err) {
      add(fail("tfc-entitlements", messageOf(err), "see the detail"));
    }
    return out;
  } finally {
    client.close();
  }
}

/** Remote operations are needed for every task; agents for tasks in agent mode. */
function entitlementsCheck(ent: Record<string, boolean> | undefined, workspaces: TfcDoctorInput["workspaces"]): CheckResult {
  if (ent === undefined) return pass("tfc-entitlements", "not offered by this server (no entitlement set); skipped");
  const agentTasks = workspaces.filter((w) => w.workspace?.executionMode === "agent").map((w) => `'${w.task}'`);
  const missing: string[] = [];
  if (ent.operations === false) missing.push("operations (remote plans and applies, which every task needs)");
  if (agentTasks.length && ent.agents === false) missing.push(`agents (tasks ${agentTasks.join(", ")} run in agent mode)`);
  if (missing.length) return fail("tfc-entitlements", `the organization's plan lacks ${missing.join(" and ")}`, "upgrade the organization's plan, or run those tasks in execution_mode \"remote\"");
  const has = ["operations", "agents", "state-storage"].filter((k) => ent[k] === true);
  return pass("tfc-entitlements", `the organization may run tasks (${has.join(", ") || "no entitlements listed"})`);
}
