// The Terraform versions a Terraform Cloud workspace of cts may run: the driver picks a new
// workspace's default among them, and the config checks a task's own version against them.

/** The Terraform versions CTS 0.9 accepts for a workspace (version/terraform.go). */
export const TFC_TERRAFORM_CONSTRAINT = ">= 0.13.0, <= 1.14.3";
const MIN_VERSION = [0, 13, 0] as const;
const MAX_VERSION = [1, 14, 3] as const;

/** Why `version` is not an exact Terraform version CTS accepts, or undefined when it is. */
export function terraformVersionProblem(version: string): string | undefined {
  const m = /^v?(\d+)(?:\.(\d+))?(?:\.(\d+))?(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$/.exec(version);
  if (!m) return `Malformed version: ${version}`;
  if (m[2] === undefined || m[3] === undefined) return `provide the exact Terraform version to install: ${version}`;
  const parts = [Number(m[1]), Number(m[2]), Number(m[3])];
  // A pre-release is below its release and outside the constraint's bounds, as go-version checks it.
  const inRange = compareVersionParts(parts, MIN_VERSION) >= 0 && compareVersionParts(parts, MAX_VERSION) <= 0 && m[4] === undefined;
  if (!inRange) return `Terraform version is not supported by Consul-Terraform-Sync, try updating to a different version (${TFC_TERRAFORM_CONSTRAINT}): ${version}`;
  return undefined;
}

/** Orders two x.y.z versions given as their three numbers. */
export function compareVersionParts(a: readonly number[], b: readonly number[]): number {
  for (let i = 0; i < 3; i++) if (a[i] !== b[i]) return a[i]! - b[i]!;
  return 0;
}
