import { execa } from "execa";

/**
 * The version of a tofu/terraform binary ("1.12.6"), from `version -json` (both print
 * `terraform_version`), falling back to the first version-looking word of the text output.
 */
export async function terraformVersion(binary: string, env: Record<string, string>, timeoutMs = 30_000): Promise<string> {
  const res = await execa(binary, ["version", "-json"], { env, extendEnv: false, reject: false, timeout: timeoutMs, stdin: "ignore" });
  if (res.failed && res.exitCode === undefined) {
    throw res.cause instanceof Error ? res.cause : new Error(res.shortMessage);
  }
  try {
    const parsed = JSON.parse(String(res.stdout)) as { terraform_version?: unknown };
    if (typeof parsed.terraform_version === "string") return parsed.terraform_version;
  } catch {
    /* older binaries: text output */
  }
  const m = /v?(\d+\.\d+\.\d+[\w.+-]*)/.exec(`${res.stdout}\n${res.stderr}`);
  if (!m) throw new Error(`'${binary} version' printed no version: ${String(res.stderr || res.stdout).slice(0, 200)}`);
  return m[1]!;
}
