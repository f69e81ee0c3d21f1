import { checkWalkDepth } from "../values/data-depth.ts";
import { redactSecret } from "../log/logger.ts";
import { isObject } from "../values/is-object.ts";
import { isTemplateValue, renderTemplates, type TemplateLookup, type TemplateValue } from "./provider-templates.ts";

/** A provider block of a module task's root module (CTS's `terraform_provider "<name>"`). */
export interface ModuleProvider {
  /** Provider local name (`aws`, `local`). */
  name: string;
  /** Provider arguments. Passed as the sensitive variable `var.<name>` through TF_VAR_<name>, never written to files. */
  config?: Record<string, unknown>;
  /** Environment of the task's Terraform commands (CTS's `task_env`), never written to files. */
  taskEnv?: Record<string, string | TemplateValue>;
  /** `required_providers` entry (CTS's `driver "terraform" { required_providers }`). */
  source?: string;
  /** Version constraint of the provider. */
  version?: string;
}

/**
 * Provider blocks as CTS writes them: `provider "<name>" { attr = var.<name>.attr }` (object values
 * become nested blocks), one `variable "<name>"` of an object type, sensitive, and the
 * `required_providers` entries that were configured.
 */
export function providerJson(providers: readonly ModuleProvider[]): Record<string, any> {
  if (providers.length === 0) return {};
  const provider: Record<string, unknown[]> = {};
  const variable: Record<string, unknown> = {};
  const required: Record<string, { source?: string; version?: string }> = {};
  for (const p of providers) {
    const config = p.config ?? {};
    provider[p.name] = [references(config, `var.${p.name}`)];
    if (Object.keys(config).length) variable[p.name] = { type: typeOf(config), sensitive: true };
    if (p.source || p.version) required[p.name] = { ...(p.source ? { source: p.source } : {}), ...(p.version ? { version: p.version } : {}) };
  }
  return {
    provider,
    ...(Object.keys(variable).length ? { variable } : {}),
    ...(Object.keys(required).length ? { terraform: { required_providers: required } } : {}),
  };
}

/**
 * TF_VAR_<provider> (an HCL object literal) and the providers' task_env; every value is hidden from
 * logs. Template values (Vault secrets, Consul keys) are rendered with `lookup` first, and each
 * rendered text is a secret too.
 */
export function providerEnvironment(providers: readonly ModuleProvider[], lookup?: TemplateLookup): Record<string, string> {
  const env: Record<string, string> = {};
  const render = <T>(v: T): T => {
    if (!lookup) return v;
    return renderTemplates(v, lookup, (text) => redactSecret(text));
  };
  for (const p of providers) {
    if (p.config && Object.keys(p.config).length) env[`TF_VAR_${p.name}`] = hclLiteral(render(p.config));
    for (const [k, raw] of Object.entries(p.taskEnv ?? {})) {
      const v = render(raw);
      if (typeof v !== "string") throw new Error(`task_env ${k} of provider '${p.name}' holds a template and no template values were given`);
      redactSecret(v);
      env[k] = v;
    }
  }
  return env;
}

// The walks below are bounded (depth = levels above the value): task validation keeps provider
// settings within MAX_DATA_DEPTH, so DATA_TOO_DEEP here means a task skipped validation.
const WHAT = "a terraform_provider's settings";

function references(config: Record<string, unknown>, path: string, depth = 1): Record<string, unknown> {
  checkWalkDepth(depth, WHAT);
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(config)) out[k] = isObject(v) && !isTemplateValue(v) ? references(v, `${path}.${k}`, depth + 1) : `\${${path}.${k}}`;
  return out;
}

/** The Terraform type of a value, so TF_VAR_ values are parsed as HCL, not taken as one string. */
function typeOf(v: unknown, depth = 0): string {
  if (typeof v === "string" || v === null || v === undefined || isTemplateValue(v)) return "string";
  if (typeof v === "number") return "number";
  if (typeof v === "boolean") return "bool";
  checkWalkDepth(depth + 1, WHAT);
  if (Array.isArray(v)) return `tuple([${v.map((x) => typeOf(x, depth + 1)).join(", ")}])`;
  return `object({${Object.entries(v as Record<string, unknown>).map(([k, x]) => `${k} = ${typeOf(x, depth + 1)}`).join(", ")}})`;
}

/** A lone UTF-16 surrogate: Terraform refuses `\ud800` ("cannot encode in UTF-8"). */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/**
 * A string as an HCL quoted literal: JSON's escapes except `\b` and `\f`, which HCL lacks (written
 * as `\u0008`, `\u000c`); a lone surrogate as U+FFFD, as the environment would carry it; `${` and
 * `%{` stay text.
 */
function hclString(s: string): string {
  return JSON.stringify(s.replace(LONE_SURROGATE, "\ufffd"))
    .replace(/\\(.)/g, (m, c: string) => (c === "b" ? "\\u0008" : c === "f" ? "\\u000c" : m))
    .replace(/([$%])\{/g, "$1$1{");
}

/** A value as an HCL literal; `${` and `%{` in strings stay text. */
function hclLiteral(v: unknown, depth = 0): string {
  if (typeof v === "string") return hclString(v);
  if (isTemplateValue(v)) throw new Error("a provider setting holds a template and no template values were given");
  if (v === null || v === undefined) return "null";
  if (typeof v !== "object") return String(v);
  checkWalkDepth(depth + 1, WHAT);
  if (Array.isArray(v)) return `[${v.map((x) => hclLiteral(x, depth + 1)).join(", ")}]`;
  return `{${Object.entries(v as Record<string, unknown>).map(([k, x]) => `${hclString(k)} = ${hclLiteral(x, depth + 1)}`).join(", ")}}`;
}


