import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

/** Paths of the real binaries integration tests use. */
export interface Tools {
  tofu: string;
  consul: string;
  /** Terraform 1.5.7 (MPL-2.0), to prove the driver works with both binaries. */
  terraform: string;
  /** CLI config that installs providers only from the offline mirror. */
  cliConfig: string;
}

let cached: Tools | undefined;

/**
 * The real Consul and OpenTofu, built by scripts/tools.sh when missing. Fails loudly: an
 * integration test never skips itself because a tool is absent.
 */
export function tools(): Tools {
  if (cached) return cached;
  let env: Record<string, string | undefined> = process.env;
  if (!env.CTS_TOFU_BIN || !env.CTS_CONSUL_BIN || !env.CTS_TF_CLI_CONFIG || !env.CTS_TERRAFORM_BIN) {
    const script = fileURLToPath(new URL("../../scripts/tools.sh", import.meta.url));
    const out = execFileSync("bash", [script, "--env"], { encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] });
    env = {};
    for (const m of out.matchAll(/^export (\w+)='(.*)'$/gm)) env[m[1]!] = m[2]!;
  }
  const t = { tofu: env.CTS_TOFU_BIN!, consul: env.CTS_CONSUL_BIN!, terraform: env.CTS_TERRAFORM_BIN!, cliConfig: env.CTS_TF_CLI_CONFIG! };
  for (const [name, path] of Object.entries(t)) {
    if (!path || !existsSync(path)) throw new Error(`test tool '${name}' not found at '${path}'. Run 'bash scripts/tools.sh'.`);
  }
  cached = t;
  return t;
}
