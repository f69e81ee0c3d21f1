import { join } from "node:path";
import type { TaskWorkspace } from "../../src/driver/types.ts";

/**
 * A task's synthesized JSON as the runtime hands it to a driver: a `local_file` at an absolute
 * path (a remote run's directory is gone after each phase), content from the string variable
 * `content` (a secret: TF_VAR_content) and the object variable `prov` (HCL, like a module task's
 * provider values), and the Consul backend every synthesis writes (the driver must drop it).
 */
export function fileTask(task: string, outDir: string, content: string, extra: Partial<TaskWorkspace> = {}): TaskWorkspace {
  const json = {
    terraform: { required_providers: { local: { source: "hashicorp/local" } }, backend: { consul: { path: "consul-terraform-sync/terraform", gzip: true } } },
    variable: { content: { type: "string", sensitive: true }, prov: { type: "object({label = string})", sensitive: true } },
    resource: { local_file: { out: { filename: join(outDir, `${task}.txt`), content: "${nonsensitive(var.content)}|${nonsensitive(var.prov.label)}" } } },
  };
  return { task, json: JSON.stringify(json), env: { TF_VAR_content: content, TF_VAR_prov: '{"label" = "p1"}', TASK_ENV_X: "x" }, ...extra };
}

/** A task whose plan fails (an undeclared variable). */
export function brokenTask(task: string): TaskWorkspace {
  return { task, json: JSON.stringify({ resource: { terraform_data: { x: { input: "${var.not_declared}" } } } }) };
}
