import { CtsError } from "../errors.ts";

/** Why an operation's signal fired. */
export type AbortReason = "cancel" | "timeout";

/** A duration as people write it: "1m30s", "45s", "800ms". */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${ms}ms`;
  if (ms < 60_000 && ms % 1000 !== 0) return `${(ms / 1000).toFixed(1)}s`;
  const s = Math.round(ms / 1000);
  const m = Math.floor(s / 60);
  return m > 0 ? `${m}m${s % 60 ? `${s % 60}s` : ""}` : `${s}s`;
}

/** TERRAFORM_CANCELLED or TERRAFORM_TIMEOUT for a command the driver interrupted. */
export function abortedError(task: string, command: string, reason: AbortReason, timeoutMs: number): CtsError {
  if (reason === "timeout") {
    return new CtsError(
      "TERRAFORM_TIMEOUT",
      "external",
      `\`${command}\` did not finish within ${formatDuration(timeoutMs)} and was stopped (SIGINT, then SIGKILL). ` +
        `Look for a hanging provider or provisioner, or raise the task's timeout.`,
      { task, detail: { command, timeoutMs } },
    );
  }
  return new CtsError(
    "TERRAFORM_CANCELLED",
    "external",
    `\`${command}\` was cancelled; Terraform was interrupted and saved what it could. Run the task again to finish.`,
    { task, detail: { command } },
  );
}

/** What a failed command left behind, for the error message. */
export interface FailureFacts {
  command: string;
  exitCode: number | undefined;
  /** Summary of Terraform's error diagnostics (or the tail of its text output). */
  errors: string;
  /** The sentence telling the user what to do. */
  hint: string;
}

/** TERRAFORM_FAILED naming the task, the command, its exit code and Terraform's own errors. */
export function failedError(task: string, facts: FailureFacts): CtsError {
  const errors = facts.errors.trim() || "no error details were printed";
  const hint = ACL_DENIED.test(errors) ? ACL_HINT : facts.hint;
  return new CtsError(
    "TERRAFORM_FAILED",
    "external",
    `\`${facts.command}\` failed (exit ${facts.exitCode ?? "by signal"}): ${errors.replace(/\.?$/, ".")} ${hint}`,
    { task, detail: { command: facts.command, exitCode: facts.exitCode, errors: facts.errors } },
  );
}

// Consul answers a missing ACL permission with 403 "Permission denied … lacks permission 'key:write' on …".
const ACL_DENIED = /Permission denied|ACL not found|\b403\b/i;
const ACL_HINT =
  "The Consul ACL token Terraform runs with lacks the permission named above. Grant it (examples/acl/cts-policy.hcl lists what cts and the consul backend need: key:write on the state path, session:write for state locks), then run the task again.";

/** TERRAFORM_NOT_FOUND when the binary cannot be started at all. */
export function notStartedError(task: string | undefined, binary: string, cause: Error): CtsError {
  return new CtsError(
    "TERRAFORM_NOT_FOUND",
    "usage",
    `could not run '${binary}': ${cause.message}. Install OpenTofu or Terraform, or set the driver's binary to its full path.`,
    { ...(task ? { task } : {}), cause, detail: { binary } },
  );
}

/**
 * The error part of a text-mode command's output (init, workspace): from the first "Error:" line,
 * else the last few lines. Terraform prints diagnostics to stderr, progress to stdout.
 */
export function textErrors(lines: readonly string[], max = 1500): string {
  const nonEmpty = lines.map((l) => l.trim()).filter(Boolean);
  const first = nonEmpty.findIndex((l) => /^(│\s*)?Error:/.test(l));
  const picked = first >= 0 ? nonEmpty.slice(first) : nonEmpty.slice(-8);
  const text = picked.map((l) => l.replace(/^[│╷╵]\s?/, "")).filter(Boolean).join(" ");
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

// Failures that a fresh `init` (and a re-created workspace) repairs: the working dir's .terraform
// was damaged or removed behind our back, or the workspace vanished from the backend.
const REINIT_PATTERNS = [
  /Backend initialization required/i,
  /Required plugins are not installed/i,
  /Inconsistent dependency lock file/i,
  /Module not installed/i,
  /Missing required provider/i,
  /please run "(tofu|terraform) init"/i,
  /workspace .* (does not|doesn't) exist/i,
  /Currently selected workspace .* does not exist/i,
];

/** True when an error text says the working dir needs `init` or the workspace is gone. */
export function needsReinit(errors: string): boolean {
  return REINIT_PATTERNS.some((p) => p.test(errors));
}
