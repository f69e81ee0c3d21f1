import type { Command } from "commander";
import { ApiClient, type ApiBody } from "./api-client.ts";
import { printJson, say } from "./output.ts";
import { resourceLine } from "./status.ts";
import { apiOptions, clientFor } from "./task.ts";

interface DecisionFlags {
  httpAddr?: string;
  json?: boolean;
  token?: string;
}

const counts = (c: ApiBody | undefined) => (c ? `+${c.add} ~${c.change} -${c.destroy}` : "");

/**
 * `cts approve <task>` and `cts reject <task>`: decide on a task's held plan through the daemon's
 * API. Approve applies exactly the held plan (exit 0), or says the new plan was held again (exit 3:
 * the inputs changed meanwhile and the new plan breaks a guard). Nothing held: exit 1 with the message.
 */
export function registerApprovals(program: Command): void {
  apiOptions(program.command("approve"))
    .description("Apply exactly the plan a task holds for approval (plan guards, approval: always)")
    .argument("<task>", "the task holding a plan")
    .action(async (name: string, flags: DecisionFlags) => {
      const body = (await (await clientFor(flags)).call("POST", `${ApiClient.taskPath(name)}/approve`, { body: {} })).approve as ApiBody;
      if (flags.json) return printJson(body);
      if (body.outcome === "held") {
        process.exitCode = 3;
        say(`task '${name}': the inputs changed since the plan was held; the new plan (${counts(body.held?.changes)}) is held again: ${(body.held?.reasons as string[] | undefined)?.join("; ") ?? ""}\n`);
        for (const r of (body.held?.resources as ApiBody[] | undefined) ?? []) say(`  ${resourceLine(r.address, r.action)}\n`);
        return;
      }
      say(`task '${name}': ${body.outcome} ${counts(body.summary)}\n`);
    });
  apiOptions(program.command("reject"))
    .description("Discard the plan a task holds for approval; nothing is applied until its inputs change")
    .argument("<task>", "the task holding a plan")
    .action(async (name: string, flags: DecisionFlags) => {
      const body = (await (await clientFor(flags)).call("POST", `${ApiClient.taskPath(name)}/reject`, { body: {} })).reject as ApiBody;
      if (flags.json) return printJson(body);
      say(`task '${name}': the held plan (${counts(body.discarded?.changes)}) was rejected and discarded; nothing was applied\n`);
    });
}
