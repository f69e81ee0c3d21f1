import { ERROR_CATALOGUE, type ErrorCode } from "./catalogue.ts";

export { ERROR_CATALOGUE, isErrorCode, type ErrorCode } from "./catalogue.ts";

/** How a failure should be treated: usage → exit 2, external → exit 1, internal → exit 70. */
export type ErrorCategory = "usage" | "external" | "internal";

/** Options shared by every cts error. */
export interface CtsErrorOptions {
  /** The task the failure belongs to, when there is one. */
  task?: string;
  /** What caused this error, kept for logs and `--verbose`. */
  cause?: unknown;
  /** Extra structured detail (construct path, command, HTTP status…). */
  detail?: Record<string, unknown>;
}

/**
 * The one error type cts throws on purpose. `code` is stable (scripts and tests match on it), the
 * message says what happened, why and how to fix it.
 */
export class CtsError extends Error {
  readonly code: ErrorCode;
  readonly category: ErrorCategory;
  readonly task: string | undefined;
  readonly detail: Record<string, unknown>;

  /** `category` restates the catalogue's for the reader; the catalogue's is the one kept. */
  constructor(code: ErrorCode, category: ErrorCategory, message: string, options: CtsErrorOptions = {}) {
    super(options.task && !message.startsWith(`Task '${options.task}'`) ? `Task '${options.task}': ${message}` : message, {
      cause: options.cause,
    });
    this.name = "CtsError";
    this.code = code;
    this.category = ERROR_CATALOGUE[code]?.category ?? category;
    this.task = options.task;
    this.detail = options.detail ?? {};
  }

  /** Process exit code for this error's category. */
  get exitCode(): number {
    return this.category === "usage" ? 2 : this.category === "external" ? 1 : 70;
  }
}

/** Wraps anything thrown into a CtsError, keeping CtsErrors as they are. */
export function toCtsError(err: unknown, code: ErrorCode = "CTS_INTERNAL", task?: string): CtsError {
  if (err instanceof CtsError) return err;
  const message = err instanceof Error ? err.message : String(err);
  return new CtsError(code, "internal", message, { cause: err, ...(task ? { task } : {}) });
}

/** The message of anything thrown. */
export function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

// Errors of watch/once whose cause `cts doctor` checks: the error codes, and what to run.
const DOCTOR_CODES = new Set<string>([
  "CONSUL_UNREACHABLE",
  "CONSUL_PERMISSION_DENIED",
  "CONSUL_TLS_FAILED",
  "CONSUL_TIMEOUT",
  "HA_CONSUL_UNREACHABLE",
  "TERRAFORM_NOT_FOUND",
  "API_LISTEN_FAILED",
  "WORKING_DIR_UNUSABLE",
]);

/** "Run `cts doctor` …" for errors whose cause doctor checks (unreachable Consul, missing permission, no binary, provider install, port), else "". */
export function doctorHint(err: { code?: unknown; detail?: Record<string, unknown>; message?: unknown } | undefined): string {
  if (!err || typeof err.code !== "string") return "";
  const initFailed = err.code === "TERRAFORM_FAILED" && String(err.detail?.command ?? "").startsWith("init");
  const fsDenied = /\b(EACCES|EROFS|ENOSPC|ENOTDIR)\b/.test(String(err.message ?? ""));
  return DOCTOR_CODES.has(err.code) || initFailed || fsDenied ? " Run `cts doctor` to check Consul, the token's permissions, Terraform, providers, the working dir and the API port." : "";
}
