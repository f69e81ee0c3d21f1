import { execFile } from "node:child_process";

/**
 * The version of a tofu/terraform binary ("1.12.6"), from `version -json` (both print
 * `terraform_version`), falling back to the first version-looking word of the text output.
 * node:child_process, not execa: the daemon calls this once per driver, and execa's module graph
 * (about 260 files) would stay resident in every daemon for it.
 */
export async function terraformVersion(binary: string, env: Record<string, string>, timeoutMs = 30_000): Promise<string> {
  const res = await new Promise<{ stdout: string; stderr: string }>((resolve, reject) => {
    const child = execFile(binary, ["version", "-json"], { env, timeout: timeoutMs, maxBuffer: 1024 * 1024, windowsHide: true }, (err, stdout, stderr) => {
      const e = err as (NodeJS.ErrnoException & { killed?: boolean }) | null;
      // A non-zero exit still prints what it knows; a binary that cannot start or hangs is an error.
      if (e && typeof e.code !== "number") {
        if (e.killed) reject(new Error(`'${binary} version' did not answer within ${timeoutMs} ms`));
        else reject(e);
        return;
      }
      resolve({ stdout: String(stdout), stderr: String(stderr) });
    });
    child.stdin?.end();
  });
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
export async function binaryIdentity(binary: string, env: Record<string, string>, timeoutMs = 30_000): Promise<BinaryIdentity> {
  const res = await new Promise<string>((resolve, reject) => {
    const child = execFile(binary, ["version"], { env, timeout: timeoutMs, maxBuffer: 1024 * 1024, windowsHide: true }, (err, stdout, stderr) => {
      const e = err as (NodeJS.ErrnoException & { killed?: boolean }) | null;
      if (e && typeof e.code !== "number") {
        if (e.killed) reject(new Error(`'${binary} version' did not answer within ${timeoutMs} ms`));
        else reject(e);
        return;
      }
      resolve(`${String(stdout)}\n${String(stderr)}`);
    });
    child.stdin?.end();
  });
  const id = parseIdentity(res);
  if (!id) throw new Error(`'${binary} version' named neither OpenTofu nor Terraform: ${res.trim().slice(0, 200)}`);
  return id;
}
