/** The Terraform driver: what the rest of cts needs from `src/terraform`. */
export { createTerraformDriver } from "./driver.ts";
export { DEFAULT_COMMAND_TIMEOUTS, DEFAULT_LOCK_TIMEOUT_MS } from "./settings.ts";
export { parseLockInfo, TERRAFORM_HUNG, TERRAFORM_STATE_LOCKED, type LockInfo } from "./failures.ts";
export { stateLockWaitText, type StateLockWait } from "./lock-wait.ts";
export { validateTaskName } from "../driver/task-name.ts";
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
  WarmProviderOptions,
} from "./types.ts";
