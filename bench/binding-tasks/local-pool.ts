import { file, provider } from "@cdktf/provider-local";
import type { ServicesCondition, TaskInput, TaskScope } from "cdktf-sync";
import { members, PoolTask } from "./pool.ts";

/** The member list with provider-local only. */
export class LocalPool extends PoolTask {
  synthesize(scope: TaskScope, input: TaskInput<ServicesCondition>): void {
    new provider.LocalProvider(scope, "local");
    new file.File(scope, "members", { filename: this.opts.path, content: members(input) });
  }
}
