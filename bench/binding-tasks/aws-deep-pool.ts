import { VpcSecurityGroupIngressRule } from "@cdktf/provider-aws/lib/vpc-security-group-ingress-rule/index.js";
import { file, provider } from "@cdktf/provider-local";
import type { ServicesCondition, TaskInput, TaskScope } from "cdktf-sync";
import { members, PoolTask } from "./pool.ts";

/** AwsPool with a deep import of the one AWS class it uses (what a root import should cost). */
export class AwsDeepPool extends PoolTask {
  synthesize(scope: TaskScope, input: TaskInput<ServicesCondition>): void {
    new provider.LocalProvider(scope, "local");
    new file.File(scope, "members", { filename: this.opts.path, content: `# ${VpcSecurityGroupIngressRule.tfResourceType}\n${members(input)}` });
  }
}
