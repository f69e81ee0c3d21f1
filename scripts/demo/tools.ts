import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";

/** The real binaries the demo runs. */
export interface DemoTools {
  tofu: string;
  consul: string;
  /** Terraform CLI config that installs providers from the offline mirror. */
  cliConfig: string;
}

/**
 * Tool paths from the environment `scripts/tools.sh --env` prints (demo.sh exports them), or from
 * running it here, which builds the tools the first time (a few minutes) and reuses them after.
 */
export function demoTools(env: NodeJS.ProcessEnv = process.env): DemoTools {
  let vars: Record<string, string | undefined> = env;
  if (!vars.CTS_TOFU_BIN || !vars.CTS_CONSUL_BIN || !vars.CTS_TF_CLI_CONFIG) {
    const script = fileURLToPath(new URL("../tools.sh", import.meta.url));
    const out = execFileSync("bash", [script, "--env"], { encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] });
    vars = {};
    for (const m of out.matchAll(/^export (\w+)='(.*)'$/gm)) vars[m[1]!] = m[2]!;
  }
  const { CTS_TOFU_BIN: tofu, CTS_CONSUL_BIN: consul, CTS_TF_CLI_CONFIG: cliConfig } = vars;
  if (!tofu || !consul || !cliConfig) throw new Error("scripts/tools.sh --env did not print CTS_TOFU_BIN, CTS_CONSUL_BIN and CTS_TF_CLI_CONFIG. Run `bash scripts/tools.sh` and read its errors.");
  return { tofu, consul, cliConfig };
}
