import type { Command } from "commander";
import { ApiClient, type ApiBody } from "./api-client.ts";
import { clusterText } from "./cluster-status.ts";
import { printJson, say, table } from "./output.ts";
import { apiOptions, clientFor } from "./task.ts";
import { counted } from "../values/counted.ts";
import { outputsText } from "./outputs-text.ts";
import { checksWords } from "../tfc/run-checks.ts";
import type { RunChecks } from "../driver/types.ts";

interface StatusFlags {
  httpAddr?: string;
  json?: boolean;
  events?: boolean;
  status?: string;
  cluster?: boolean;
}

/** A task's drift column: the last finding and when, or "-" without drift checks. */
function driftText(d: ApiBody | undefined): string {
  if (!d) return "-";
  const when = d.checked_at ? ` at ${d.checked_at}` : "";
  const changes = d.changes ? ` (+${d.changes.add} ~${d.changes.change} -${d.changes.destroy})` : "";
  return `${d.status}${changes}${when}${d.enabled ? ` every ${d.every}` : ""}`;
}

/** Terraform's plan symbols for an action: `+ local_file.a` (create), `-/+` (replace), `~` (update). */
const ACTION_SYMBOL: Record<string, string> = { create: "+", delete: "-", update: "~", replace: "-/+", read: "<=" };

/** One changed resource of an event: Terraform's symbol for the action, the address, the action. */
export function resourceLine(address: string, action: string): string {
  return `${ACTION_SYMBOL[action] ?? "*"} ${address} (${action})`;
}

/** Each task's status without its events list, its newest event kept as `last_run`. */
function withoutEvents(tasks: ApiBody): ApiBody {
  return Object.fromEntries(
    Object.entries(tasks).map(([name, t]) => {
      const { events, ...rest } = t as ApiBody;
      return [name, { ...rest, last_run: (events as ApiBody[] | undefined)?.[0] ?? null }];
    }),
  );
}

/** `cts status [task]`: the daemon's task summary and each task's status (and events). */
export function registerStatus(program: Command): void {
  apiOptions(program.command("status"))
    .description("Show the status of a running cts and its tasks (through its HTTP API)")
    .argument("[task]", "one task (default: all)")
    .option("--events", "include each task's recent events")
    .option("--status <status>", "only tasks with this status: successful, errored, critical or unknown")
    .option("--cluster", "show the high-availability cluster: members, their health and (shared mode) the tasks each one runs")
    .action(async (name: string | undefined, flags: StatusFlags) => {
      const api = await clientFor(flags);
      if (flags.cluster) {
        const { request_id: _, ...cluster } = await api.call("GET", "/v1/status/cluster");
        if (flags.json) return printJson(cluster);
        return void process.stdout.write(clusterText(cluster));
      }
      // The events are always asked for: the LAST RUN and RESULT columns show the newest one; --events lists them all.
      const query = { include: "events", status: flags.status };
      const [summary, tasks] = await Promise.all([
        api.call("GET", "/v1/status"),
        api.call("GET", name === undefined ? "/v1/status/tasks" : ApiClient.taskPath(name, "/v1/status/tasks"), { query }),
      ]);
      // Without --events the JSON keeps CTS's shape of a plain status (no events), plus the last one.
      if (flags.json) return printJson({ ...summary, tasks: flags.events ? tasks : withoutEvents(tasks) });
      const s = summary.task_summary as ApiBody;
      process.stdout.write(
        `Tasks: ${s.status.successful} successful, ${s.status.errored} errored, ${s.status.critical} critical, ${s.status.unknown} unknown; ` +
          `${s.enabled.true} enabled, ${s.enabled.false} disabled\n\n`,
      );
      // Beyond CTS: a daemon that cannot reach Consul says so first.
      const consul = summary.consul as ApiBody | undefined;
      if (consul && consul.reachable === false)
        say(`Consul: UNREACHABLE since ${consul.since ?? "?"} (${consul.reason ?? "no reason given"}); task statuses are stale (STATUS shows the last one in brackets)\n\n`);
      const list = Object.values(tasks) as ApiBody[];
      process.stdout.write(
        table([
          ["TASK", "STATUS", "ENABLED", "LAST RUN", "RESULT", "DRIFT"],
          ...list.map((t) => {
            const last = (t.events as ApiBody[] | undefined)?.[0];
            const result = last ? (last.success ? (last.outcome ?? "ok") : last.outcome === "held" || last.outcome === "rejected" ? last.outcome : "failed") : "-";
            return [t.task_name, t.held ? "held" : t.stale ? `unknown (stale: ${t.stale.last_status})` : t.status, String(t.enabled), last?.end_time ?? "never", result, driftText(t.drift)];
          }),
        ]),
      );
      // What waits for a person comes first, with the commands that decide.
      for (const t of list.filter((t) => t.held)) {
        const h = t.held as ApiBody;
        process.stdout.write(`\n==> ${t.task_name}: plan held since ${h.held_at}${h.approved_at ? ` (approved ${h.approved_at}, applying)` : ""}: +${h.changes.add} ~${h.changes.change} -${h.changes.destroy}\n`);
        for (const r of h.reasons as string[]) say(`  reason: ${r}\n`);
        for (const r of (h.resources as ApiBody[] | undefined) ?? []) say(`      ${resourceLine(r.address, r.action)}\n`);
        say(`  decide: cts approve ${t.task_name}   |   cts reject ${t.task_name}\n`);
      }
      // Beyond CTS: a task's latest Terraform outputs, when one task is asked for (`cts task outputs` shows them too).
      if (name !== undefined)
        for (const t of list.filter((t) => t.outputs)) {
          process.stdout.write(`\n==> ${t.task_name}: outputs of ${t.outputs.updated_at}\n`);
          say(outputsText(t.outputs.values as Record<string, ApiBody>).replace(/^/gm, "  "));
        }
      if (!flags.events) return;
      for (const t of list) {
        const events = (t.events as ApiBody[] | undefined) ?? [];
        if (!events.length) continue;
        process.stdout.write(`\n==> ${t.task_name}: last ${counted(events.length, "event")} (newest first)\n`);
        for (const e of events) {
          const counts = e.changes ? `  +${e.changes.add} ~${e.changes.change} -${e.changes.destroy}` : "";
          say(`  ${e.end_time}  ${e.success ? "ok    " : "FAILED"}  ${e.outcome ?? ""}${counts}${e.error ? `  ${e.error.message}` : ""}\n`);
          // The user's frames of a task that threw (error.stack), under the event's line.
          const frames: unknown[] = Array.isArray(e.error?.stack) ? e.error.stack : [];
          for (const f of frames) say(`      at ${String(f)}\n`);
          for (const r of (e.resources as ApiBody[] | undefined) ?? []) say(`      ${resourceLine(r.address, r.action)}\n`);
          // Terraform Cloud driver: where the run can be seen.
          if (typeof e.run_url === "string") say(`      run: ${e.run_url}\n`);
          // Terraform Cloud's own checks of the run: policies and cost estimate.
          if (e.checks && typeof e.checks === "object") say(`      checks: ${checksWords(e.checks as RunChecks)}\n`);
          // An apply that could not save its state: what it left outside the saved state.
          if (typeof e.state_not_saved === "string" && e.success) say(`      after an apply that could not save its state: ${e.state_not_saved}\n`);
          for (const o of (e.outside_state as ApiBody[] | undefined) ?? []) say(`      outside the saved state: ${o.address}${o.id ? ` (id ${o.id})` : ""}\n`);
        }
      }
    });
}
