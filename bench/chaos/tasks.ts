/**
 * Task classes only the chaos scenarios use (generated configs import this module by absolute
 * path). The member-list tasks come from bench/tasks.ts.
 */
import { file, provider } from "@cdktf/provider-local";
import { DataResource, Fn } from "cdktf";
import { render, services, Task, type ServicesCondition, type TaskInput, type TaskScope } from "../../src/index.ts";

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

/** The ways HostileFiles writes each instance's catalog strings, one file per way (`<dir>/<way>/<id>`). */
export const HOSTILE_WAYS = ["plain", "json", "keys", "join", "template"] as const;

/**
 * Writes each instance's catalog strings (name, `meta.v`, tags) the ways task code does: as a
 * plain attribute, `JSON.stringify` in task code, `Fn.jsonencode` with the tags as map keys,
 * `Fn.join`, and a handlebars template with `{{json}}`. Every file must hold exactly what Consul
 * holds (bench/chaos/hostile-catalog.ts knows the expected bytes of each way).
 */
export class HostileFiles extends Task<ServicesCondition> {
  constructor(
    name: string,
    private readonly dir: string,
    regexp: string,
  ) {
    super({ name, condition: services({ regexp, passingOnly: false }), bufferPeriod: false });
  }
  synthesize(scope: TaskScope, input: TaskInput<ServicesCondition>): void {
    new provider.LocalProvider(scope, "local");
    for (const s of input.services) {
      // The ids are plain (h-<n>): the file names stay predictable, the data is in the contents.
      const v = s.meta.v ?? "";
      const content: Record<(typeof HOSTILE_WAYS)[number], string> = {
        plain: v,
        json: JSON.stringify({ name: s.name, v, tags: s.tags }),
        keys: Fn.jsonencode(Object.fromEntries(s.tags.map((t) => [t, v]))),
        join: Fn.join("|", [s.name, v, ...s.tags]),
        template: render("name={{json name}} v={{json meta.v}} tags={{json tags}}", s),
      };
      for (const way of HOSTILE_WAYS) new file.File(scope, `${way}-${s.id}`, { filename: `${this.dir}/${way}/${s.id}`, content: content[way] });
    }
  }
}
