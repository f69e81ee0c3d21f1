/**
 * Task classes only the chaos scenarios use (generated configs import this module by absolute
 * path). The member-list tasks come from bench/tasks.ts.
 */
import { file, provider } from "@cdktf/provider-local";
import { DataResource } from "cdktf";
import { Task, type ServicesCondition, type TaskInput, type TaskScope } from "../../src/index.ts";

/**
 * A member list whose apply takes `seconds` longer: a terraform_data replaced on every content
 * change runs a local-exec `sleep` (no null provider offline), and the file waits for it, so a
 * daemon killed during the sleep has not written the new list yet.
 */
export class SlowMemberFile extends Task<ServicesCondition> {
  constructor(
    name: string,
    condition: ServicesCondition,
    private readonly path: string,
    private readonly seconds: number,
  ) {
    super({ name, condition, bufferPeriod: false });
  }
  synthesize(scope: TaskScope, input: TaskInput<ServicesCondition>): void {
    new provider.LocalProvider(scope, "local");
    let content = "";
    for (const s of input.services) content += `${s.name} ${s.id} ${s.address}:${s.port} ${s.status}\n`;
    const slow = new DataResource(scope, "slow", { triggersReplace: { content }, provisioners: [{ type: "local-exec", command: `sleep ${this.seconds}` }] });
    new file.File(scope, "members", { filename: this.path, content, dependsOn: [slow] });
  }
}
