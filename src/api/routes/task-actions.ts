import { jsonWithRequestId } from "../answer.ts";
import { changeHooks } from "../change-hooks.ts";
import { heldToApi } from "../../cts/api/shape.ts";
import type { ApiApp } from "../env.ts";
import { allow, queryParams, taskName } from "../request-target.ts";
import { failed, runOf } from "../run-answers.ts";
import { existingTask, type RouteKit } from "./kit.ts";

/** `POST /v1/tasks/{name}/drift`, `/approve` and `/reject`: what a person asks of one task. */
export function taskActionRoutes(app: ApiApp, { deps, guard, locks }: RouteKit): void {
  const { controller: ctrl, log } = deps;

  app.all("/v1/tasks/:name/drift", allow("POST"), taskName);
  app.post("/v1/tasks/:name/drift", queryParams(), ...guard(), changeHooks(deps, "drift"), async (c) => {
    const name = c.get("task");
    existingTask(ctrl, name);
    const outcome = await ctrl.checkDrift(name);
    if (!outcome.ok) throw failed(outcome, `the drift check of task '${name}' failed`);
    const d = outcome.drift;
    return jsonWithRequestId(c, 200, {
      drift: {
        task: name,
        status: d?.state ?? outcome.outcome,
        changes_present: d?.state === "drifted" || d?.state === "corrected",
        ...(d?.changes ? { changes: d.changes } : {}),
        ...(d?.applied ? { applied: d.applied } : {}),
        ...(d ? { checked_at: d.checkedAt } : {}),
        plan: d?.changes ? (outcome.result?.output ?? "") : "",
      },
    });
  });

  // Applies exactly the held plan (or checks the new one when the inputs changed).
  app.all("/v1/tasks/:name/approve", allow("POST"), taskName);
  app.post("/v1/tasks/:name/approve", queryParams(), ...guard(), changeHooks(deps, "approve"), (c) => {
    const name = c.get("task");
    return locks.run(name, async () => {
      existingTask(ctrl, name);
      log.info(`task '${name}': held plan approved through the API`, { task: name });
      const outcome = await ctrl.approve(name);
      if (!outcome.ok && outcome.outcome !== "held") throw failed(outcome, `applying the approved plan of task '${name}' failed`);
      return jsonWithRequestId(c, 200, { approve: { task: name, ...runOf(outcome), ...(outcome.hold ? { held: heldToApi(outcome.hold) } : {}) } });
    });
  });

  // Discards the held plan.
  app.all("/v1/tasks/:name/reject", allow("POST"), taskName);
  app.post("/v1/tasks/:name/reject", queryParams(), ...guard(), changeHooks(deps, "reject"), (c) => {
    const name = c.get("task");
    return locks.run(name, async () => {
      existingTask(ctrl, name);
      const held = await ctrl.reject(name);
      log.info(`task '${name}': held plan rejected through the API`, { task: name });
      return jsonWithRequestId(c, 200, { reject: { task: name, discarded: heldToApi(held) } });
    });
  });
}
