import type { Command } from "commander";
import { messageOf } from "../errors/cts-error.ts";
import { ApiClient, type ApiBody } from "./api-client.ts";
import { printJson, say, table } from "./output.ts";
import { apiOptions, clientFor } from "./task.ts";

interface DriftFlags {
  httpAddr?: string;
  json?: boolean;
  token?: string;
}

/** Exit codes of `cts drift`: like `terraform plan -detailed-exitcode`. */
export const DRIFT_EXIT = { none: 0, error: 1, drift: 2 } as const;

const changesText = (c: ApiBody | undefined) => (c ? `+${c.add} ~${c.change} -${c.destroy}` : "-");

/** `cts drift [task…]`: checks tasks for drift now, through the daemon's API (exit 0 none, 2 drift, 1 error). */
export function registerDrift(program: Command): void {
  apiOptions(program.command("drift"))
    .description("Check tasks for drift now: plan against the last applied inputs (exit 0 none, 2 drift, 1 error)")
    .argument("[task...]", "tasks to check (default: every enabled task)")
    .action(async (names: string[], flags: DriftFlags) => {
      const api = await clientFor(flags);
      let tasks: string[];
      try {
        tasks = names.length ? names : ((await api.call("GET", "/v1/tasks")).tasks as ApiBody[]).filter((t) => t.enabled).map((t) => t.name as string);
      } catch (err) {
        // Exit 1 on any error (not the CtsError's own code): scripts test 0/1/2 as with `terraform plan -detailed-exitcode`.
        say(`error: ${messageOf(err)}\n`, process.stderr);
        process.exitCode = DRIFT_EXIT.error;
        return;
      }
      // The daemon's queue bounds how many run at once; asking for all at once costs nothing more.
      const results = await Promise.all(
        tasks.map(async (name) => {
          try {
            return { name, drift: (await api.call("POST", `${ApiClient.taskPath(name)}/drift`, { body: {} })).drift as ApiBody };
          } catch (err) {
            return { name, error: messageOf(err) };
          }
        }),
      );
      const drifted = results.some((r) => r.drift?.changes_present === true);
      const failed = results.some((r) => r.error !== undefined);
      process.exitCode = failed ? DRIFT_EXIT.error : drifted ? DRIFT_EXIT.drift : DRIFT_EXIT.none;
      if (flags.json) return printJson({ results });
      process.stdout.write(
        table([
          ["TASK", "DRIFT", "CHANGES", "CORRECTED"],
          ...results.map((r) =>
            r.error !== undefined
              ? [r.name, "error", "-", "-"]
              : [r.name, String(r.drift!.status), changesText(r.drift!.changes), r.drift!.status === "corrected" ? changesText(r.drift!.applied) : "-"],
          ),
        ]),
      );
      for (const r of results) {
        if (r.error !== undefined) say(`\n==> ${r.name}: ${r.error}\n`, process.stderr);
        else if (r.drift!.plan) say(`\n==> ${r.name}: plan\n${String(r.drift!.plan).trimEnd()}\n`);
      }
    });
}
