import { CtsError } from "../errors/cts-error.ts";

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

/**
 * The error for a failed command: TERRAFORM_STATE_LOCKED when its output (`raw`, every line it
 * printed) says the state lock was held past the lock timeout, else TERRAFORM_FAILED.
 */
export function commandFailure(task: string, facts: FailureFacts, raw: string, lockTimeoutMs: number): CtsError {
  if (isStateLocked(raw) || isStateLocked(facts.errors)) return stateLockedError(task, facts.command, lockTimeoutMs, parseLockInfo(raw), facts.errors);
  return failedError(task, facts);
}

/** TERRAFORM_FAILED naming the task, the command, its exit code and Terraform's own errors. */
export function failedError(task: string, facts: FailureFacts): CtsError {
  const errors = facts.errors.trim() || "no error details were printed";
  const hint = ACL_DENIED.test(errors) ? ACL_HINT : (openTofuStateHint(facts.command, errors) ?? (isProviderBroken(errors) ? PROVIDER_HINT : facts.hint));
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

/** True when a run failed because its working dir needs a fresh `init` (a TERRAFORM_FAILED whose errors say so). */
export function needsFreshInit(err: unknown): boolean {
  return err instanceof CtsError && err.code === "TERRAFORM_FAILED" && needsReinit(String(err.detail.errors ?? ""));
}

/** Error code of a run that failed because the task's state lock stayed held past the lock timeout. */
export const TERRAFORM_STATE_LOCKED = "TERRAFORM_STATE_LOCKED";
/** Error code of a command that hung twice (killed and retried once). */
export const TERRAFORM_HUNG = "TERRAFORM_HUNG";

/** How tofu and terraform say the state lock is held by someone else. */
const STATE_LOCKED = /Error acquiring the state lock|Error locking state|failed to lock state/i;

/** The "Lock Info" Terraform prints about the holder of a state lock. */
export interface LockInfo {
  ID?: string;
  Path?: string;
  Operation?: string;
  Who?: string;
  Version?: string;
  Created?: string;
  Info?: string;
}

const LOCK_KEYS = ["ID", "Path", "Operation", "Who", "Version", "Created", "Info"] as const;

/** Parses Terraform's "Lock Info:" block (one `Key: value` per line) out of its error text. */
export function parseLockInfo(text: string): LockInfo | undefined {
  const at = text.indexOf("Lock Info:");
  if (at < 0) return undefined;
  const info: LockInfo = {};
  for (const raw of text.slice(at + "Lock Info:".length).split("\n")) {
    const m = /^[\s│]*(ID|Path|Operation|Who|Version|Created|Info):\s*(.*)$/.exec(raw);
    if (!m) {
      if (raw.replace(/[\s│]/g, "") === "") continue;
      break;
    }
    const value = m[2]!.trim();
    if (value) info[m[1] as (typeof LOCK_KEYS)[number]] = value;
  }
  return Object.keys(info).length ? info : undefined;
}

/**
 * True when a failed command's output says the state lock is held by someone else. A lock refused
 * by Consul's ACLs ("Permission denied", 403) prints the same "Error acquiring the state lock"
 * headline but never frees itself: that is a plain failure with the ACL hint, not a lock to wait out.
 */
export function isStateLocked(text: string): boolean {
  if (text.includes("Lock Info:")) return true;
  return STATE_LOCKED.test(text) && !ACL_DENIED.test(text);
}

/** TERRAFORM_STATE_LOCKED: the state stayed locked longer than the lock timeout. */
export function stateLockedError(task: string, command: string, lockTimeoutMs: number, lock: LockInfo | undefined, errors: string): CtsError {
  const holder = lock?.Who ? ` by ${lock.Who}` : "";
  const what = lock?.Operation ? ` (${lock.Operation}${lock.Created ? ` since ${lock.Created}` : ""})` : "";
  const unlock = lock?.ID ? `\`tofu force-unlock ${lock.ID}\`` : "`tofu force-unlock <lock ID>`";
  return new CtsError(
    TERRAFORM_STATE_LOCKED,
    "external",
    `\`${command}\` could not take the Terraform state lock within ${formatDuration(lockTimeoutMs)}: the state is locked${holder}${what}. ` +
      `cts waits such locks out and runs the task again (a crashed run's Consul lock expires by itself within about a minute). ` +
      `Only if no Terraform is running for this task anywhere, release it with ${unlock} in the task's working directory, as a last resort.`,
    { task, detail: { command, lockTimeoutMs, lock: lock ?? {}, errors } },
  );
}

/** TERRAFORM_HUNG: a command produced no exit within its time limit twice in a row. */
export function hungError(task: string, command: string, limitMs: number, how = `no exit within ${formatDuration(limitMs)}`): CtsError {
  return new CtsError(
    TERRAFORM_HUNG,
    "external",
    `Terraform hung in \`${command}\` (${how}); it was killed and retried once, and hung again. ` +
      `This is usually the state backend not answering (for consul: check the agent and its leader) or a stuck provider; ` +
      `the task runs again on its next trigger. Raise driver.terraform.commandTimeouts if the command is merely slow.`,
    { task, detail: { command, limitMs } },
  );
}

// A provider binary vanished or changed under a running command: the plugin cache or mirror, never the backend.
const PROVIDER_BROKEN =
  /fork\/exec .*terraform-provider|failed to verify checksum|plugin-cache|failed to instantiate provider|Could not load plugin|could not read package directory|there is no package for .* cached in/i;
export const PROVIDER_HINT =
  "A provider plugin could not be started or verified: its file in the plugin cache or provider mirror changed or vanished while the command ran. Check the driver's pluginCacheDir and the CLI config's provider_installation, then run the task again.";

/**
 * Terraform run on a state OpenTofu wrote: the state names its providers at registry.opentofu.org,
 * which Terraform does not install, so every command fails. The fix is one `state replace-provider`
 * per provider (OpenTofu reads the registry.terraform.io addresses back, so going back stays open).
 */
export function openTofuStateHint(command: string, errors: string): string | undefined {
  if (!/^terraform\b/.test(command)) return undefined;
  const providers = [...new Set([...errors.matchAll(/registry\.opentofu\.org\/([\w.-]+\/[\w.-]+)/g)].map((m) => m[1]!))].sort();
  if (providers.length === 0 || !/unavailable provider|failed to instantiate provider|Could not load the schema/i.test(errors)) return undefined;
  const commands = providers.map((p) => `terraform state replace-provider -auto-approve registry.opentofu.org/${p} registry.terraform.io/${p}`);
  return `The task's state was written by OpenTofu and names its providers at registry.opentofu.org, which Terraform does not use. To switch this task to Terraform, run in its working dir, with TF_WORKSPACE set to the task's name and the backend's settings cts gives Terraform (CONSUL_HTTP_ADDR…): ${commands.map((c) => `\`${c}\``).join(", then ")}; then run the task again. Or set driver.terraform.binary back to tofu.`;
}

/** True when an error text is about a provider plugin that could not be executed or verified. */
export function isProviderBroken(errors: string): boolean {
  return PROVIDER_BROKEN.test(errors);
}
