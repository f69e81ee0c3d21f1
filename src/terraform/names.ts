import { CtsError } from "../errors/cts-error.ts";
import { nameProblem } from "../driver/task-name.ts";

/** Throws FILE_NAME_INVALID unless an extra task file name stays a plain file in the task folder. */
export function validateFileName(task: string, file: string, reserved: readonly string[]): void {
  const problem = reserved.includes(file) ? "the driver writes that file itself" : nameProblem(file);
  if (problem) {
    throw new CtsError(
      "FILE_NAME_INVALID",
      "usage",
      `extra file ${JSON.stringify(file)} cannot be written: ${problem}. Use a plain file name such as "terraform.tfvars.json".`,
      { task, detail: { file } },
    );
  }
}
