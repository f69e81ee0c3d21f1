import type * as Cdktf from "cdktf";
import type { TerraformVariable } from "cdktf";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import type { Construct } from "constructs";
import { CtsError } from "../errors/cts-error.ts";
import { redactSecret } from "../log/logger.ts";
import { isTemplateValue, renderTemplate, TemplateRenderError, type TemplateLookup, type TemplateValue } from "./provider-templates.ts";

/** Where a provider secret comes from at run time: an environment variable of the daemon, a file, or Vault (`vaultSecret()`). */
export type SecretSource = { env: string } | { file: string } | TemplateValue;

/** Terraform variable names a secret may use. */
export const SECRET_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * A sensitive Terraform variable for a provider secret. Use the returned token where the secret
 * goes (a provider argument, a resource attribute): the synthesized JSON holds only `var.<name>`,
 * and the value reaches Terraform as `TF_VAR_<name>` in its environment at each run, never in a file.
 */
export function secret(scope: Construct, name: string): string {
  const existing = scope.node.tryFindChild(`secret-${name}`) as TerraformVariable | undefined;
  // Loaded on use: the runtime imports this file for secretEnv, and module-task daemons never need cdktf.
  const { TerraformVariable: Variable } = createRequire(import.meta.url)("cdktf") as typeof Cdktf;
  const v = existing ?? new Variable(scope, `secret-${name}`, { type: "string", sensitive: true, nullable: false });
  v.overrideLogicalId(name);
  return v.stringValue;
}

/** Resolves a task's secrets to `TF_VAR_` environment variables (and hides the values from logs). */
export function secretEnv(task: string, secrets: Record<string, SecretSource> | undefined, env: NodeJS.ProcessEnv = process.env, lookup?: TemplateLookup): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, source] of Object.entries(secrets ?? {})) {
    let value: string | undefined;
    if (isTemplateValue(source)) {
      if (!lookup) throw new CtsError("SECRET_MISSING", "usage", `secret '${name}' reads Vault, and no Vault is configured. Add vault: { address } to the config (or set VAULT_ADDR).`, { task });
      try {
        value = renderTemplate(source, lookup);
      } catch (cause) {
        if (cause instanceof TemplateRenderError) throw new CtsError("SECRET_MISSING", "usage", `secret '${name}': ${cause.message}.`, { task, cause });
        throw cause;
      }
    } else if ("env" in source) {
      value = env[source.env];
      if (value === undefined || value === "")
        throw new CtsError("SECRET_MISSING", "usage", `secret '${name}' reads the environment variable ${source.env}, which is not set. Set it in the daemon's environment.`, { task });
    } else {
      try {
        value = readFileSync(source.file, "utf8").replace(/\r?\n$/, "");
      } catch (cause) {
        throw new CtsError("SECRET_MISSING", "usage", `secret '${name}' reads ${source.file}, which cannot be read (${(cause as Error).message}). Create it or fix the path.`, { task, cause });
      }
    }
    redactSecret(value);
    out[`TF_VAR_${name}`] = value;
  }
  return out;
}
