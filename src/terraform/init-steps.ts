import type { CtsError } from "../errors/cts-error.ts";
import { commandFailure, textErrors } from "./failures.ts";
import type { Operation, TextResult } from "./operation.ts";
import { lockTimeoutArg } from "./settings.ts";

/**
 * The preparation commands of a task folder: `init` and making sure the task's workspace exists.
 * `lockTimeoutMs` is the driver's state-lock wait (part of the failure classification).
 */
export function createInitSteps(lockTimeoutMs: number) {
  const lockArg = lockTimeoutArg(lockTimeoutMs);
  // `workspace select -or-create` (tofu; Terraform since 1.4) is one launch where select-then-new
  // is two for a new task; an older Terraform that does not know the flag gets the pair.
  let orCreate = true;

  function failure(op: Operation, args: string[], res: TextResult, hint: string): CtsError {
    return commandFailure(op.task, { command: op.commandName(args), exitCode: res.exitCode, errors: textErrors(res.lines), hint }, res.lines.join("\n"), lockTimeoutMs);
  }
  const workspaceHint = "Check that the state backend is reachable (for the consul backend: CONSUL_HTTP_ADDR, CONSUL_HTTP_TOKEN) and run the task again.";

  return {
    /** Selects the task's workspace, creating it when it does not exist yet. */
    async ensureWorkspace(op: Operation): Promise<void> {
      if (orCreate) {
        const res = await op.text(["workspace", "select", "-or-create", "-no-color", op.task], undefined, { quiet: true });
        if (res.exitCode === 0) return;
        if (!/flag provided but not defined/i.test(res.lines.join("\n"))) throw failure(op, ["workspace", "select"], res, workspaceHint);
        orCreate = false;
      }
      const selected = await op.text(["workspace", "select", "-no-color", op.task], undefined, { quiet: true });
      if (selected.exitCode === 0) return;
      const created = await op.text(["workspace", "new", "-no-color", lockArg, op.task]);
      if (created.exitCode === 0) return;
      // A `new` killed as hung may have created the workspace before it stuck.
      if (created.lines.some((l) => /already exists/i.test(l))) return;
      throw failure(op, ["workspace", "new"], created, workspaceHint);
    },

    /** `init`, once more with `-upgrade` when the config now asks for versions the lock file excludes. */
    async runInit(op: Operation): Promise<void> {
      let res = await op.text(["init", "-input=false", "-no-color"]);
      if (res.exitCode !== 0 && /lock file|locked provider/i.test(res.lines.join("\n"))) {
        res = await op.text(["init", "-input=false", "-no-color", "-upgrade"]);
      }
      if (res.exitCode !== 0) {
        throw failure(
          op,
          ["init"],
          res,
          "Check the backend settings and that providers and modules can be installed (the CLI config's provider_installation, versions, network), then run the task again.",
        );
      }
    },
  };
}

/** The preparation commands `createInitSteps` returns. */
export type InitSteps = ReturnType<typeof createInitSteps>;
