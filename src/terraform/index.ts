/** The Terraform driver: what the rest of cts needs from `src/terraform`. */
export { createTerraformDriver, DEFAULT_COMMAND_TIMEOUTS, DEFAULT_LOCK_TIMEOUT_MS } from "./driver.ts";
export { parseLockInfo, type LockInfo } from "./failures.ts";
/** Error code of a run that failed because another Terraform held the task's state lock past the lock timeout; retry it later. */
export const TERRAFORM_STATE_LOCKED = "TERRAFORM_STATE_LOCKED";
/** Error code of a command that hung twice (killed and retried once). */
export const TERRAFORM_HUNG = "TERRAFORM_HUNG";
export { validateTaskName } from "./names.ts";
export { initHash } from "./init-hash.ts";
export { terraformVersion } from "./version.ts";
export type {
  ChangeSummary,
  CommandTimeouts,
  LocalTerraformDriver,
  RunOptions,
  RunResult,
  TaskWorkspace,
  TerraformDriver,
  TerraformDriverOptions,
} from "./types.ts";
