import { execa } from "execa";
import { tools } from "./tools.ts";

/** What a tofu command printed and how it ended. */
export interface TofuRun {
  exitCode: number | undefined;
  stdout: string;
  stderr: string;
}

/**
 * The environment every test Terraform command needs: the offline CLI config (the machine's
 * TF_CLI_CONFIG_FILE may point at a missing file), no checkpoint calls, no prompts.
 */
export function tofuEnv(extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith("TF_")) env[k] = v;
  return { ...env, TF_CLI_CONFIG_FILE: tools().cliConfig, CHECKPOINT_DISABLE: "1", TF_IN_AUTOMATION: "1", TF_INPUT: "0", ...extra };
}

/** Runs the real tofu in `dir` with the offline CLI config; never throws on a non-zero exit. */
export async function runTofu(dir: string, args: string[], env: Record<string, string> = {}): Promise<TofuRun> {
  const res = await execa(tools().tofu, args, { cwd: dir, env: tofuEnv(env), extendEnv: false, reject: false, stdin: "ignore", timeout: 120_000 });
  return { exitCode: res.exitCode, stdout: String(res.stdout), stderr: String(res.stderr) };
}
