import { CtsError } from "../../errors/cts-error.ts";
import { jsonWithRequestId } from "../answer.ts";
import { changeHooks } from "../change-hooks.ts";
import { heldToApi, specToCts, taskToCts } from "../../cts/api/shape.ts";
import { encodeVariables } from "../../cts/api/variables.ts";
import type { ApiApp } from "../env.ts";
import { ApiError, apiErrorOf } from "../http-error.ts";
import { allow, queryParams, taskName } from "../request-target.ts";
import { failed, inspectOf, runOf } from "../run-answers.ts";
import { createBody, jsonBody, patchBody, patchSchemas, requestSchemas } from "../task-body.ts";
import { existingTask, type RouteKit } from "./kit.ts";
import { pinRequest } from "./task-pin.ts";
import { checkTaskChain, downstreamRefusal, type ChainTasks } from "../task-chain.ts";

const RUN = { run: ["now", "inspect"] } as const;

/**
 * `/v1/tasks` (list, create) and `/v1/tasks/{name}` (read, change, delete). Declared after the
 * task actions (task-actions.ts): `/v1/tasks/{name}/drift` would match `:name{.*}` too.
 */
export function taskRoutes(app: ApiApp, { deps, guard, locks, bodyLimit }: RouteKit): void {
  const { controller: ctrl, log } = deps;
  const driver = deps.driver ?? "terraform";
  /** The daemon's tasks as the chain checks read them (config and API tasks). */
  const chainTasks = (): ChainTasks => ctrl.taskNames().map((name) => ({ name, after: ctrl.view(name)?.after }));

  app.all("/v1/tasks", allow("GET", "POST"));
  app.get("/v1/tasks", queryParams(), ...guard(), (c) => jsonWithRequestId(c, 200, { tasks: ctrl.taskNames().flatMap((n) => ctrl.view(n) ?? []).map(taskToCts) }));

  app.post("/v1/tasks", queryParams(RUN), ...guard(), changeHooks(deps), jsonBody(bodyLimit), createBody(driver), async (c) => {
    const spec = c.get("spec");
    const { run } = c.get("query");
    return locks.run(spec.name, async () => {
      if (ctrl.view(spec.name)) throw new ApiError(400, `task with name ${spec.name} already exists. Delete it first, or PATCH it.`);
      checkTaskChain(spec, chainTasks());
      if (run === "inspect") {
        // CTS answers a failed dry run with 400 (the task as sent cannot be planned).
        const inspect = await ctrl
          .dryRunModuleTask(spec)
          .then(inspectOf)
          .catch((err: unknown) => {
            const api = err instanceof CtsError ? apiErrorOf(err) : err;
            throw api instanceof ApiError && api.status >= 500 ? new ApiError(400, api.message) : api;
          });
        // CTS answers `run`, its older PATCH answered `inspect`: both, so either client reads it.
        const task = specToCts(spec);
        const { url, ...plan } = inspect;
        const asRun = { ...plan, ...(url ? { tfc_run_url: url } : {}) };
        return jsonWithRequestId(c, 200, { task: { ...task, version: task.version ?? "", variables: encodeVariables(spec.variables), providers: [], origin: "api" }, inspect, run: asRun });
      }
      ctrl.addModuleTask(spec);
      log.info(`task '${spec.name}': created through the API`, { task: spec.name, module: spec.module });
      const body: Record<string, unknown> = { task: taskToCts(existingTask(ctrl, spec.name)) };
      if (run === "now" && spec.enabled !== false) {
        const outcome = await ctrl.runNow(spec.name);
        // A plan held by the task's guards (or approval "always") is what the task asked for, not a failure.
        if (outcome.outcome === "held" && outcome.hold) {
          body.run = { ...runOf(outcome), held: heldToApi(outcome.hold) };
          return jsonWithRequestId(c, 201, body);
        }
        if (!outcome.ok) throw failed(outcome, `task '${spec.name}' was created but its first run failed (fix it with PATCH or delete it)`);
        body.run = runOf(outcome);
      }
      return jsonWithRequestId(c, 201, body);
    });
  });

  // `{.*}`: an empty or slashed name reaches the name check and is refused there (400), not answered 404.
  app.all("/v1/tasks/:name{.*}", allow("GET", "PATCH", "DELETE"), taskName);
  app.get("/v1/tasks/:name{.*}", queryParams(), ...guard(), (c) => jsonWithRequestId(c, 200, { task: taskToCts(existingTask(ctrl, c.get("task"))) }));

  // A pin request skips the change hooks, so with pinning the body is read before them.
  const beforePatch = deps.pin ? [jsonBody(bodyLimit), pinRequest(ctrl, deps.pin), changeHooks(deps)] : [changeHooks(deps), jsonBody(bodyLimit)];
  // Beyond CTS: `force=true` with `run=now` applies even when the inputs equal what was applied last.
  app.patch("/v1/tasks/:name{.*}", queryParams({ ...RUN, force: ["true", "false"] }), ...guard(), ...beforePatch, patchBody, async (c) => {
    const name = c.get("task");
    const patch = c.get("patch");
    const { run, force } = c.get("query");
    if (force === "true" && run !== "now") throw new ApiError(400, `force=true needs run=now: a forced run is a run (PATCH /v1/tasks/${name}?run=now&force=true).`);
    const [{ parseTask }, { patchedTask }] = await Promise.all([requestSchemas(), patchSchemas()]);
    return locks.run(name, async () => {
      const v = existingTask(ctrl, name);
      if (Object.keys(patch.changes).length > 0) {
        if (v.origin !== "api" || !v.spec)
          throw new ApiError(400, `task '${name}' is defined in code (${v.className}); through the API only 'enabled' can change. Change it in cts.config.ts and restart.`);
        const spec = parseTask(patchedTask(specToCts(v.spec), patch), "task", { driver });
        checkTaskChain(spec, chainTasks());
        if (run === "inspect") return jsonWithRequestId(c, 200, { inspect: inspectOf(await ctrl.dryRunModuleTask(spec)) });
        await ctrl.replaceModuleTask(name, spec);
        log.info(`task '${name}': replaced through the API`, { task: name, fields: Object.keys(patch.changes).join(",") });
        // A changed spec means changed infrastructure: without run=now it runs in the background.
        if (run !== "now" && spec.enabled !== false) void ctrl.runNow(name).catch(() => undefined);
      } else if (run === "inspect") {
        if (patch.enabled === false) return jsonWithRequestId(c, 200, { inspect: { changes_present: false, plan: `Disabling task '${name}' changes no infrastructure.` } });
        return jsonWithRequestId(c, 200, { inspect: inspectOf(await ctrl.planTask(name)) });
      } else if (patch.enabled !== undefined) {
        // With run=now the run below is the one that reports; no second, queued run.
        await ctrl.setEnabled(name, patch.enabled, { run: run !== "now" });
        log.info(`task '${name}': ${patch.enabled ? "enabled" : "disabled"} through the API`, { task: name });
      }
      const body: Record<string, unknown> = {};
      if (run === "now" && existingTask(ctrl, name).enabled) {
        const outcome = await ctrl.runNow(name, { force: force === "true" });
        if (!outcome.ok) throw failed(outcome, `running task '${name}' failed`);
        body.run = runOf(outcome);
      }
      return jsonWithRequestId(c, 200, { ...body, task: taskToCts(existingTask(ctrl, name)) });
    });
  });

  app.delete("/v1/tasks/:name{.*}", queryParams({ destroy: ["true", "false"] }), ...guard(), changeHooks(deps), async (c) => {
    const name = c.get("task");
    const destroy = c.get("query").destroy === "true";
    return locks.run(name, async () => {
      existingTask(ctrl, name);
      // Task chains: a task others run after stays until they are deleted or no longer list it.
      const refusal = downstreamRefusal(name, chainTasks());
      if (refusal) throw new ApiError(409, refusal);
      log.info(`task '${name}': deleting through the API${destroy ? " (destroying its infrastructure first)" : ""}`, { task: name });
      const outcome = await ctrl.deleteTask(name, { destroy });
      return jsonWithRequestId(c, 202, destroy ? { destroyed: outcome?.result?.summary.destroy ?? 0 } : {});
    });
  });
}
