import { existsSync } from "node:fs";

/** Inputs to one command's environment, lowest precedence first. */
export interface EnvParts {
  /** The daemon's own environment (PATH, HOME, proxies…). */
  inherited: NodeJS.ProcessEnv;
  /** The driver's base env (Consul address, token, TLS). */
  base?: Record<string, string>;
  /** The task's env (provider secrets, TF_VAR_…). */
  task?: Record<string, string>;
  /** The state backend's credentials (backendSecretEnv): over everything else, as the backend block's own settings. */
  backend?: Record<string, string>;
  cliConfigFile?: string;
  pluginCacheDir?: string;
  /** Workspace to run in (TF_WORKSPACE); unset for init and `workspace` commands. */
  workspace?: string;
}

/**
 * The environment of one Terraform command. Secrets reach Terraform only here, never in files.
 * Inherited variables that would change what our flags mean (TF_CLI_ARGS*, TF_WORKSPACE) are
 * dropped; the caller's explicit env may still set them on purpose.
 */
export function commandEnv(parts: EnvParts): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(parts.inherited)) {
    if (v === undefined) continue;
    if (k.startsWith("TF_CLI_ARGS") || k === "TF_WORKSPACE") continue;
    env[k] = v;
  }
  // The machine may point TF_CLI_CONFIG_FILE at a file that does not exist; tofu then warns on
  // every command. Without a configured file, use Terraform's default lookup instead.
  if (env.TF_CLI_CONFIG_FILE && !existsSync(env.TF_CLI_CONFIG_FILE)) delete env.TF_CLI_CONFIG_FILE;
  Object.assign(env, parts.base, parts.task, parts.backend);
  if (parts.cliConfigFile) env.TF_CLI_CONFIG_FILE = parts.cliConfigFile;
  if (parts.pluginCacheDir) env.TF_PLUGIN_CACHE_DIR = parts.pluginCacheDir;
  env.TF_IN_AUTOMATION = "1";
  env.TF_INPUT = "0";
  env.CHECKPOINT_DISABLE = "1";
  if (parts.workspace) env.TF_WORKSPACE = parts.workspace;
  else delete env.TF_WORKSPACE;
  return env;
}
