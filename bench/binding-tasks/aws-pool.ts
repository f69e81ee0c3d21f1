import * as aws from "@cdktf/provider-aws";
import { file, provider } from "@cdktf/provider-local";
import type { ServicesCondition, TaskInput, TaskScope } from "cdktf-sync";
import { members, PoolTask } from "./pool.ts";

/** The member list, in a task that imports the AWS binding at its root and uses one class of it. */
export class AwsPool extends PoolTask {
  synthesize(scope: TaskScope, input: TaskInput<ServicesCondition>): void {
    new provider.LocalProvider(scope, "local");
    const rule = aws.vpcSecurityGroupIngressRule.VpcSecurityGroupIngressRule.tfResourceType;
    new file.File(scope, "members", { filename: this.opts.path, content: `# ${rule}\n${members(input)}` });
  }
}
