import type { Command } from "commander";
import { ApiClient, type ApiBody } from "./api-client.ts";
import { printJson, say, table } from "./output.ts";
import { resourceLine } from "./status.ts";
import { apiOptions, clientFor } from "./task.ts";
import { outputsText } from "./outputs-text.ts";

interface HistoryFlags {
  httpAddr?: string;
  json?: boolean;
  token?: string;
  limit?: string;
  before?: string;
  all?: boolean;
  resources?: boolean;
}

const changes = (p: ApiBody | undefined) => (p ? `+${p.changes.add} ~${p.changes.change} -${p.changes.destroy}` : "-");

function seconds(ms: number): string {
  return ms < 10_000 ? `${(ms / 1000).toFixed(1)}s` : `${Math.round(ms / 1000)}s`;
}

/** `cts history <task>` and `cts task outputs <task>`: a task's run history and its latest outputs, through the daemon's API. */
export function registerHistory(program: Command): void {
  apiOptions(program.command("history"))
    .description("Show a task's run history (newest first): trigger, outcome, changes, duration; --resources lists each run's plan")
    .argument("<task>", "task name")
    .option("--limit <n>", "runs per page (1-100, default 20)")
    .option("--before <run-id>", "the page after this run (the 'next' a page ends with)")
    .option("--all", "every kept run, page after page")
    .option("--resources", "each run's resource changes by address")
    .action(async (name: string, flags: HistoryFlags) => {
      const api = await clientFor(flags);
      const path = `${ApiClient.taskPath(name)}/runs`;
      const runs: ApiBody[] = [];
      let before = flags.before;
      let page: ApiBody;
      do {
        page = await api.call("GET", path, { query: { limit: flags.limit, before } });
        runs.push(...(page.runs as ApiBody[]));
        before = page.next as string | undefined;
      } while (flags.all && before);
      if (flags.json) return printJson({ task: name, total: page.total, runs, ...(page.next && !flags.all ? { next: page.next } : {}) });
      if (!runs.length) return say(`Task '${name}' has no runs kept yet.\n`);
      say(
        table([
          ["RUN", "STARTED", "TRIGGER", "OUTCOME", "CHANGES", "DURATION", "INPUTS"],
          ...runs.map((r) => [r.id, r.start_time, r.trigger, r.success ? r.outcome : `${r.outcome} (failed)`.replace("failed (failed)", "failed"), changes(r.plan), seconds(r.duration_ms), r.inputs_digest ? String(r.inputs_digest).slice(0, 12) : "-"]),
        ]),
      );
      for (const r of runs) {
        const resources = (r.plan?.resources as ApiBody[] | undefined) ?? [];
        const lines = [...(r.run_url ? [`  run: ${r.run_url}`] : []), ...(r.error ? [`  error: ${r.error}`] : []), ...(flags.resources ? resources.map((x) => `  ${resourceLine(x.address, x.action)}`) : [])];
        if (lines.length) say(`\n${r.id} (${r.outcome}):\n${lines.join("\n")}\n`);
      }
      if (page.next && !flags.all) say(`\nOlder runs: cts history ${name} --before ${page.next as string}  (${page.total as number} kept)\n`);
    });

  const task = program.commands.find((c) => c.name() === "task");
  if (!task) return;
  apiOptions(task.command("outputs"))
    .description("Show a task's latest Terraform outputs (sensitive values redacted)")
    .argument("<name>", "task name")
    .action(async (name: string, flags: HistoryFlags) => {
      const api = await clientFor(flags);
      const res = await api.call("GET", `${ApiClient.taskPath(name)}/outputs`);
      if (flags.json) return printJson({ task: name, outputs: res.outputs });
      if (!res.outputs) return say(`Task '${name}' has no outputs yet (it has not applied).\n`);
      say(`Task '${name}': outputs of ${res.outputs.updated_at as string}\n`);
      say(outputsText(res.outputs.values as Record<string, ApiBody>));
    });
}
