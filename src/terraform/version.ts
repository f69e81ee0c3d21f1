import type { ProbeResult, TerraformProbe } from "./probe.ts";

/** The output of `binary args`; a binary that cannot start or hangs is an error, a non-zero exit still prints what it knows. */
async function versionOutput(runner: TerraformProbe, binary: string, args: readonly string[], timeoutMs: number): Promise<ProbeResult> {
  const res = await runner.probe(binary, args, { timeoutMs });
  if (res.spawnError) throw res.spawnError;
  if (res.timedOut) throw new Error(`'${binary} version' did not answer within ${timeoutMs} ms`);
  return res;
}

/**
 * The version of a tofu/terraform binary ("1.12.6"), from `version -json` (both print
 * `terraform_version`), falling back to the first version-looking word of the text output.
 */
export async function terraformVersion(runner: TerraformProbe, binary: string, timeoutMs = 30_000): Promise<string> {
  const res = await versionOutput(runner, binary, ["version", "-json"], timeoutMs);
  try {
    const parsed = JSON.parse(res.stdout) as { terraform_version?: unknown };
    if (typeof parsed.terraform_version === "string") return parsed.terraform_version;
  } catch {
    /* older binaries: text output */
  }
  const m = /v?(\d+\.\d+\.\d+[\w.+-]*)/.exec(`${res.stdout}\n${res.stderr}`);
  if (!m) throw new Error(`'${binary} version' printed no version: ${String(res.stderr || res.stdout).slice(0, 200)}`);
  return m[1]!;
}

/** Which binary a working dir was initialized with: its kind and version ("tofu 1.12.6", "terraform 1.5.7"). */
export interface BinaryIdentity {
  kind: "tofu" | "terraform";
  version: string;
}

/** The identity as the init record and messages write it: `<kind> <version>`. */
export function identityText(id: BinaryIdentity): string {
  return `${id.kind} ${id.version}`;
}

/**
 * Kind and version from what `version` prints: "OpenTofu v1.12.6" or "Terraform v1.5.7" (the JSON
 * form does not say which of the two printed it). Undefined when neither is there.
 */
export function parseIdentity(text: string): BinaryIdentity | undefined {
  const m = /\b(OpenTofu|Terraform) v(\d+\.\d+\.\d+[\w.+-]*)/.exec(text);
  return m ? { kind: m[1] === "OpenTofu" ? "tofu" : "terraform", version: m[2]! } : undefined;
}

/** The identity of a tofu/terraform binary, from its text `version` output. */
export async function binaryIdentity(runner: TerraformProbe, binary: string, timeoutMs = 30_000): Promise<BinaryIdentity> {
  const res = await versionOutput(runner, binary, ["version"], timeoutMs);
  const text = `${res.stdout}\n${res.stderr}`;
  const id = parseIdentity(text);
  if (!id) throw new Error(`'${binary} version' named neither OpenTofu nor Terraform: ${text.trim().slice(0, 200)}`);
  return id;
}
