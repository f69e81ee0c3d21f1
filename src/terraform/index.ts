/** The Terraform driver: what the rest of cts needs from `src/terraform`. */
export { createTerraformDriver } from "./driver.ts";
export { validateTaskName } from "./names.ts";
export { initHash } from "./init-hash.ts";
export { terraformVersion } from "./version.ts";
export type {
  ChangeSummary,
  LocalTerraformDriver,
  RunOptions,
  RunResult,
  TaskWorkspace,
  TerraformDriver,
  TerraformDriverOptions,
} from "./types.ts";
