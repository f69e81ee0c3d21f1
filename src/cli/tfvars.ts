import { readFile } from "node:fs/promises";
import { MAX_DATA_DEPTH } from "../values/data-depth.ts";
import { CtsError, messageOf } from "../errors/cts-error.ts";
import { attributesOf, parseHcl, type HclValue } from "../config/hcl.ts";

/**
 * Reads a task's `variable_files` as CTS's `task create` does (`api.TaskRequestFromTaskConfig`):
 * each `.tfvars` file, opened relative to the current directory, holds `name = value` attributes;
 * later files win. Values must be literals (the same HCL reader as task files).
 */
export async function readVariableFiles(files: unknown, where: string): Promise<Record<string, HclValue>> {
  if (!Array.isArray(files) || !files.every((f) => typeof f === "string"))
    throw new CtsError("TASK_FILE_INVALID", "usage", `${where}: variable_files must be a list of file names, like ["task.tfvars"].`);
  const out: Record<string, HclValue> = {};
  for (const file of files as string[]) {
    let text: string;
    try {
      text = await readFile(file, "utf8");
    } catch (err) {
      throw new CtsError("TASK_FILE_INVALID", "usage", `${where}: cannot read variable file '${file}': ${messageOf(err)}. Paths are relative to the current directory, as in CTS.`);
    }
    const body = await parseHcl(text, file, "TASK_FILE_INVALID", MAX_DATA_DEPTH);
    if (body.blocks.length) throw new CtsError("TASK_FILE_INVALID", "usage", `${file}:${body.blocks[0]!.line}: a variable file holds only 'name = value' lines, not '${body.blocks[0]!.type}' blocks.`);
    Object.assign(out, attributesOf(body));
  }
  return out;
}
