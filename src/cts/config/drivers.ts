import type { TerraformCloudDriverConfig, TerraformDriverConfig } from "../../config/types.ts";
import { configError, TERRAFORM_DRIVER_KEYS, TFC_DRIVER_KEYS, type ReadBlock } from "../../config/hcl-schema.ts";
import { isObject } from "../../values/is-object.ts";
import type { HclValue } from "../../config/hcl.ts";
import { redactSecret } from "../../log/logger.ts";
import { backendSecretEnv } from "../../config/backend-secrets.ts";
import { terraformCloudDriverProblems } from "../../config/terraform-cloud.ts";
import { tlsFileSettings } from "./tls.ts";

/** The two drivers CTS knows, by their HCL label. */
export type CtsDriverLabel = "terraform" | "terraform-cloud";

/** What the `driver` blocks of a CTS config say. */
export interface CtsDrivers {
  /** The driver the tasks run on (`terraform` when no driver block is given). */
  label: CtsDriverLabel;
  /** Settings of `driver "terraform"` (working_dir is added by the caller). */
  terraform: TerraformDriverConfig;
  terraformCloud?: TerraformCloudDriverConfig;
  /** `required_providers` of either driver, for the tasks' provider blocks. */
  providerReqs: Record<string, { source?: string; version?: string }>;
}

const BACKENDS = ["azurerm", "consul", "cos", "gcs", "kubernetes", "local", "manta", "pg", "s3"];
/** `{{ env "NAME" }}`, the one template a token may be (CTS allows templates there). */
const ENV_TEMPLATE = /^\s*\{\{-?\s*env\s+"([^"]+)"\s*-?\}\}\s*$/;

const one = (b: ReadBlock, name: string): ReadBlock | undefined => b.blocks[name]?.[0];
const lineOf = (b: ReadBlock, key: string) => b.lines[key] ?? one(b, key)?.line ?? b.line;

/**
 * Reads the `driver` blocks: at most one driver, each with only its own keys
 * (CTS-SOURCE-NOTES §1.3 for `terraform`, CTS-TFC-NOTES §1 for `terraform-cloud`).
 * `env` gives the TFC_HOSTNAME / TFC_ORGANIZATION / TFC_TOKEN fallbacks.
 */
export function ctsDrivers(root: ReadBlock, kvPath: string, warn: (b: ReadBlock, key: string, why: string) => void, env: NodeJS.ProcessEnv = process.env): CtsDrivers {
  const drivers = root.blocks.driver ?? [];
  const out: CtsDrivers = { label: "terraform", terraform: {}, providerReqs: {} };
  for (const d of drivers) if (d.labels[0] !== "terraform" && d.labels[0] !== "terraform-cloud") throw configError(d.file, d.line, `driver "${d.labels[0]}" is not a driver. Use driver "terraform" or driver "terraform-cloud".`);
  if (drivers.length > 1) {
    const [a, b] = drivers as [ReadBlock, ReadBlock];
    throw configError(b.file, b.line, `only one driver can be configured: driver "${a.labels[0]}" (${a.file}:${a.line}) and driver "${b.labels[0]}" are both set. Remove one (CTS runs every task on one driver).`);
  }
  const d = drivers[0];
  if (!d) return out;
  out.label = d.labels[0] as CtsDriverLabel;
  const foreign = out.label === "terraform" ? TFC_DRIVER_KEYS : TERRAFORM_DRIVER_KEYS;
  for (const key of [...Object.keys(d.attrs), ...Object.keys(d.blocks)])
    if (foreign.includes(key))
      throw configError(
        d.file,
        lineOf(d, key),
        out.label === "terraform"
          ? `'${key}' is not a valid key in driver "terraform": it belongs to driver "terraform-cloud". Valid keys: ${TERRAFORM_DRIVER_KEYS.join(", ")}, required_providers.`
          : `'${key}' is not a valid key in driver "terraform-cloud": Terraform Cloud runs Terraform and keeps the state itself. Valid keys: ${TFC_DRIVER_KEYS.join(", ")}, required_providers.`,
      );
  for (const [name, req] of Object.entries(one(d, "required_providers")?.attrs ?? {})) {
    // Terraform's old shorthand, which CTS's own tests use: `aws = "~> 5.0"` is the version.
    if (typeof req === "string") {
      out.providerReqs[name] = { version: req };
      continue;
    }
    if (!isObject(req)) throw configError(d.file, lineOf(d, "required_providers"), `required_providers.${name} must be { source = "...", version = "..." }.`);
    out.providerReqs[name] = { ...(req.source ? { source: String(req.source) } : {}), ...(req.version ? { version: String(req.version) } : {}) };
  }
  if (out.label === "terraform") out.terraform = terraformDriver(d, kvPath, warn);
  else {
    out.terraformCloud = terraformCloudDriver(d, warn, env);
    if (Object.keys(out.providerReqs).length) out.terraformCloud.requiredProviders = out.providerReqs;
  }
  return out;
}

function terraformDriver(d: ReadBlock, kvPath: string, warn: (b: ReadBlock, key: string, why: string) => void): TerraformDriverConfig {
  const tf: TerraformDriverConfig = {};
  if (d.attrs.path !== undefined) tf.binary = `${String(d.attrs.path).replace(/\/$/, "")}/terraform`;
  if (d.attrs.version !== undefined) warn(d, "version", "has no effect: cts does not download Terraform; it runs tofu, or the binary in driver.path.");
  if (d.attrs.log === true) tf.log = true;
  if (d.attrs.persist_log === true) warn(d, "persist_log", "has no effect: cts does not write terraform.log; run with --log-level debug to see Terraform's output.");
  const backends = d.blocks.backend ?? [];
  if (backends.length > 1) throw configError(backends[1]!.file, backends[1]!.line, "only one backend can be configured.");
  const be = backends[0];
  if (be) {
    const type = be.labels[0]!;
    if (!BACKENDS.includes(type)) throw configError(be.file, be.line, `backend "${type}" is not supported (CTS allows ${BACKENDS.join(", ")}).`);
    // Credentials go to Terraform's environment, not into main.tf.json (src/synth/backend.ts); never logged.
    for (const v of Object.values(backendSecretEnv({ [type]: be.attrs }))) redactSecret(v);
    // CTS fills a consul backend's path and gzip under what the user set.
    tf.backend = { [type]: type === "consul" ? { path: `${kvPath.replace(/\/$/, "")}/terraform`, gzip: true, ...be.attrs } : { ...be.attrs } };
  }
  return tf;
}

/** `driver "terraform-cloud"`: the token stays a reference to the environment when it comes from there. */
function terraformCloudDriver(d: ReadBlock, warn: (b: ReadBlock, key: string, why: string) => void, env: NodeJS.ProcessEnv): TerraformCloudDriverConfig {
  const a = d.attrs;
  const where = 'driver "terraform-cloud"';
  const text = (key: string): string | undefined => {
    const v = a[key];
    if (v === undefined) return undefined;
    if (typeof v !== "string") throw configError(d.file, lineOf(d, key), `'${key}' in driver "terraform-cloud" must be a string.`);
    return v === "" ? undefined : v;
  };
  const out: TerraformCloudDriverConfig = {};

  const hostname = text("hostname") ?? (env.TFC_HOSTNAME || undefined);
  if (hostname !== undefined) {
    let url: URL | undefined;
    try {
      url = new URL(/^[a-z][a-z0-9+.-]*:\/\//i.test(hostname) ? hostname : `https://${hostname}`);
    } catch {
      url = undefined;
    }
    if (!url || (url.protocol !== "https:" && url.protocol !== "http:") || (url.pathname !== "/" && url.pathname !== ""))
      throw configError(d.file, a.hostname !== undefined ? lineOf(d, "hostname") : d.line, `hostname '${hostname}'${a.hostname === undefined ? " (from TFC_HOSTNAME)" : ""} is not a host name or https:// address. Write e.g. hostname = "https://app.terraform.io" or "tfe.example.com".`);
    out.hostname = hostname;
  }

  const organization = text("organization") ?? (env.TFC_ORGANIZATION || undefined);
  if (organization === undefined) throw configError(d.file, d.line, `${where} needs the organization: set organization = "<name>" or the TFC_ORGANIZATION environment variable.`);
  out.organization = organization;

  const token = text("token");
  if (token !== undefined) {
    const ref = ENV_TEMPLATE.exec(token);
    if (ref) out.token = { env: ref[1]! };
    else if (token.includes("{{")) throw configError(d.file, lineOf(d, "token"), `'token' in driver "terraform-cloud" may only be a literal or {{ env "NAME" }} (no Consul key or Vault templates). Put the token in the environment of cts and write token = "{{ env \\"TFC_TOKEN\\" }}", or leave token out to use TFC_TOKEN.`);
    else {
      redactSecret(token);
      out.token = token;
    }
  } else if (env.TFC_TOKEN) out.token = { env: "TFC_TOKEN" };
  else throw configError(d.file, d.line, `${where} needs an API token: set the TFC_TOKEN environment variable (preferred: it stays out of files) or token = "...".`);

  const ws = one(d, "workspaces");
  const prefix = ws?.attrs.prefix;
  if (prefix !== undefined && typeof prefix !== "string") throw configError(ws!.file, lineOf(ws!, "prefix"), "'workspaces.prefix' must be a string.");
  const oldPrefix = a.workspace_prefix;
  if (oldPrefix !== undefined && typeof oldPrefix !== "string") throw configError(d.file, lineOf(d, "workspace_prefix"), "'workspace_prefix' must be a string.");
  const workspaces: NonNullable<TerraformCloudDriverConfig["workspaces"]> = {};
  if (oldPrefix !== undefined) {
    if (prefix !== undefined) warn(d, "workspace_prefix", `is deprecated and ignored: workspaces.prefix ("${prefix}") is set and wins.`);
    else {
      warn(d, "workspace_prefix", `is deprecated (since CTS 0.5): workspaces are named "${oldPrefix}-<task>". Write workspaces { prefix = "${oldPrefix}-" } instead.`);
      if (oldPrefix !== "") workspaces.prefix = `${oldPrefix}-`;
    }
  }
  if (prefix) workspaces.prefix = prefix;
  const lists: Array<[string, "tags" | "tagsAllowlist" | "tagsDenylist"]> = [["tags", "tags"], ["tags_allowlist", "tagsAllowlist"], ["tags_denylist", "tagsDenylist"]];
  for (const [key, field] of lists) {
    const v = ws?.attrs[key];
    if (v === undefined) continue;
    if (!Array.isArray(v) || v.some((t: HclValue) => typeof t !== "string" || t === ""))
      throw configError(ws!.file, lineOf(ws!, key), `'workspaces.${key}' must be a list of tag names, e.g. ${key} = ["team-a", "prod"].`);
    if (v.length) workspaces[field] = v as string[];
  }
  if (Object.keys(workspaces).length) out.workspaces = workspaces;

  const tls = one(d, "tls");
  if (tls) {
    const t = tls.attrs;
    const set = Object.keys(t).filter((k) => k !== "enabled");
    // CTS: any TLS field turns TLS on; enabled = false turns it off.
    if (t.enabled !== false && (t.enabled === true || set.length)) {
      for (const k of ["ca_cert", "ca_path", "cert", "key", "server_name"]) if (t[k] !== undefined && typeof t[k] !== "string") throw configError(tls.file, lineOf(tls, k), `'tls.${k}' must be a string.`);
      if (t.verify !== undefined && typeof t.verify !== "boolean") throw configError(tls.file, lineOf(tls, "verify"), "'tls.verify' must be true or false.");
      if ((t.cert === undefined) !== (t.key === undefined))
        throw configError(tls.file, tls.line, "driver \"terraform-cloud\" tls needs both cert and key for a client certificate, or neither.");
      out.tls = tlsFileSettings(t, t.verify as boolean | undefined);
    }
  }
  // The rules cts.config.ts gets too (names, tags, hostname), reported at the HCL key's line.
  for (const p of terraformCloudDriverProblems({ terraformCloud: out }, env)) {
    const path = p.field.replace(/^driver\.terraformCloud\.?/, "").split(".");
    const hclPath = path.map((k) => k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`));
    const key = hclPath[0] ?? "";
    const blk = key === "workspaces" || key === "tls" ? one(d, key) : undefined;
    let line = d.line;
    if (blk && hclPath[1]) line = lineOf(blk, hclPath[1]);
    else if (key === "workspaces" && !blk && a.workspace_prefix !== undefined) line = lineOf(d, "workspace_prefix");
    else if (key) line = lineOf(d, key);
    throw configError(d.file, line, `driver "terraform-cloud" ${hclPath.filter(Boolean).join(".") || ""} ${p.message}`.replace(/\s+/g, " "));
  }
  return out;
}
