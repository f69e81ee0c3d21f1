/** The outcome of one `cts doctor` check. */
export interface CheckResult {
  /** Short stable id: consul, reads:<task>, state, session, terraform, providers, working-dir, api-port. */
  name: string;
  ok: boolean;
  /** What was found. */
  detail: string;
  /** How to fix it (failed checks only). */
  fix?: string;
}

/** A passed check. */
export const pass = (name: string, detail: string): CheckResult => ({ name, ok: true, detail });
/** A failed check with its fix. */
export const fail = (name: string, detail: string, fix: string): CheckResult => ({ name, ok: false, detail, fix });

/** One line per check: `✓ name: detail` or `✗ name: detail. Fix: …`. */
export function formatCheck(r: CheckResult): string {
  return r.ok ? `✓ ${r.name}: ${r.detail}` : `✗ ${r.name}: ${r.detail.replace(/\.$/, "")}. Fix: ${r.fix ?? "see the detail"}`;
}

// Errors of watch/once whose cause `cts doctor` checks: the error codes, and what to run.
const DOCTOR_CODES = new Set([
  "CONSUL_UNREACHABLE",
  "CONSUL_PERMISSION_DENIED",
  "CONSUL_TLS_FAILED",
  "CONSUL_TIMEOUT",
  "HA_CONSUL_UNREACHABLE",
  "TERRAFORM_NOT_FOUND",
  "API_LISTEN_FAILED",
  "TASK_DIR_INVALID",
]);

/** "Run `cts doctor` …" for errors whose cause doctor checks (unreachable Consul, missing permission, no binary, provider install, port), else "". */
export function doctorHint(err: { code?: unknown; detail?: Record<string, unknown>; message?: unknown } | undefined): string {
  if (!err || typeof err.code !== "string") return "";
  const initFailed = err.code === "TERRAFORM_FAILED" && String(err.detail?.command ?? "").startsWith("init");
  const fsDenied = /\b(EACCES|EROFS|ENOSPC|ENOTDIR)\b/.test(String(err.message ?? ""));
  return DOCTOR_CODES.has(err.code) || initFailed || fsDenied ? " Run `cts doctor` to check Consul, the token's permissions, Terraform, providers, the working dir and the API port." : "";
}
