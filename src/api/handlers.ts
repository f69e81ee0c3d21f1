import { CtsError } from "../errors.ts";
import type { Logger } from "../log.ts";
import type { RunOutcome, TaskControl } from "../runtime/interfaces.ts";
import { createKeyedSerializer } from "../driver/serial.ts";
import { heldToApi, overallStatus, specToCts, taskStatus, taskToCts, type CtsTaskStatus } from "./cts-shape.ts";
import { decodeCreateRequest, decodePatchRequest } from "./cts-decode.ts";
import { encodeVariables } from "./cts-variables.ts";
import { ApiError } from "./http-io.ts";
import type { Match } from "./router.ts";

// zod and the request schemas load with the first request that creates or changes a task: a daemon
// whose tasks nobody changes through the API never holds them (about 10 MB resident).
const requestSchemas = () => import("./task-request.ts");
const patchSchemas = () => import("./task-patch.ts");

/** The controller operations the API uses: the runtime's TaskControl (a fake can stand in for unit tests). */
export type ApiController = TaskControl;

/** What the API server needs. */
export interface ApiDeps {
  controller: ApiController;
  log: Logger;
  /** Why the daemon is unhealthy (Consul unreachable…), or undefined when healthy. */
  health?: () => Promise<string | undefined>;
  /** Largest accepted request body in bytes (default 1 MiB). */
  bodyLimitBytes?: number;
  /** `GET /v1/status/cluster`'s body (high availability); without it the route answers 405. */
  cluster?: () => Promise<Record<string, unknown>>;
  /** Called before every task-changing call; throws to refuse it (an HA follower's redirect error). */
  beforeChange?: (change: { method: string; task?: string; /** What the call does to the task (approve and reject word their redirect with the command). */ action?: "approve" | "reject" | "drift" }) => void | Promise<void>;
  /** Shared cluster mode: `PATCH {"pin": "<member>"}` pins a task to a member (null unpins). */
  pin?: (task: string, member: string | null) => Promise<void>;
  /** Awaited after every task-changing call, before answering (HA: the change is stored in Consul). */
  afterChange?: () => Promise<void>;
  /** Whether Consul answers (the daemon's one client): `GET /v1/status` says so beside CTS's summary. */
  consul?: ConsulState;
  /** The daemon's driver: with "terraformCloud" a task may carry CTS's terraform_cloud_workspace and terraform_version (default "terraform"). */
  driver?: "terraform" | "terraformCloud";
  /** `GET /metrics`: the Prometheus text (app.ts answers it; without it the route answers 404). */
  metrics?: () => Promise<{ contentType: string; body: string }>;
}

/** A handler's answer. */
export interface Answer {
  status: number;
  body: Record<string, unknown>;
}

/** Maps a CtsError from the runtime to an API error (`detail.status`, when set, wins). */
export function apiErrorOf(err: CtsError): ApiError {
  const status = err.detail.status;
  if (typeof status === "number" && Number.isInteger(status) && status >= 400 && status <= 599) return new ApiError(status, err.message);
  if (err.code === "TASK_NOT_FOUND") return new ApiError(404, err.message);
  // CTS answers a duplicate create with 400, not 409: its clients expect that.
  if (err.code === "TASK_EXISTS") return new ApiError(400, err.message);
  return new ApiError(err.category === "usage" ? 400 : 500, err.message);
}

function failed(outcome: RunOutcome, what: string): ApiError {
  const err = outcome.error ?? new CtsError("TASK_RUN_FAILED", "external", `${what} ${outcome.outcome}`, { task: outcome.task });
  const api = apiErrorOf(err);
  return new ApiError(api.status, `${what}: ${err.message}`);
}

/** CTS's InspectPlan: the plan, and (Terraform Cloud driver) the speculative run's `url`. */
function inspectOf(outcome: RunOutcome): { changes_present: boolean; plan: string; url?: string } {
  if (!outcome.ok) throw failed(outcome, `planning task '${outcome.task}' failed`);
  return { changes_present: outcome.result?.changesPresent ?? false, plan: outcome.result?.output ?? "", ...(outcome.result?.url ? { url: outcome.result.url } : {}) };
}

/** CTS's Run: with the Terraform Cloud driver, the run's `tfc_run_url`. */
function runOf(outcome: RunOutcome): Record<string, unknown> {
  return {
    outcome: outcome.outcome,
    changes_present: outcome.result?.changesPresent ?? false,
    ...(outcome.result ? { summary: outcome.result.summary } : {}),
    ...(outcome.result?.url ? { tfc_run_url: outcome.result.url } : {}),
  };
}

/** Whether Consul answers, as the API and the dashboard read it (the daemon's reachability tracker). */
export interface ConsulState {
  reachable: boolean;
  lostSince?: string | undefined;
  reason?: string | undefined;
  /** Told each change (the dashboard's live updates); returns the removal. */
  onChange?(listener: (reachable: boolean) => void): () => void;
}

/** Reads the request's JSON body (size-limited by the server). */
export type BodyReader = () => Promise<unknown>;

/** Creates the request handler for matched routes. */
export function createHandlers(deps: ApiDeps): (m: Match, body: BodyReader) => Promise<Answer> {
  const { controller: ctrl, log } = deps;
  // One mutation per task at a time (CTS holds a mutex for the same reason): a PATCH arriving while
  // a DELETE of the same task waits for its run must see the outcome, not interleave with it.
  const locks = createKeyedSerializer();
  const existing = (name: string) => {
    const v = ctrl.view(name);
    if (!v) throw new ApiError(404, `no task named '${name}'. List tasks with GET /v1/tasks or \`cts task list\`.`);
    return v;
  };
  const guard = async <T>(fn: () => Promise<T>): Promise<T> => {
    try {
      return await fn();
    } catch (err) {
      throw err instanceof CtsError ? apiErrorOf(err) : err;
    }
  };

  async function createTask(m: Match, body: BodyReader): Promise<Answer> {
    const { parseCreateBody } = await requestSchemas();
    const spec = parseCreateBody(await decodeCreateRequest(await body()), { driver: deps.driver ?? "terraform" });
    const run = m.query.get("run");
    return locks.run(spec.name, () =>
      guard(async () => {
        if (ctrl.view(spec.name)) throw new ApiError(400, `task with name ${spec.name} already exists. Delete it first, or PATCH it.`);
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
          return { status: 200, body: { task: { ...task, version: task.version ?? "", variables: encodeVariables(spec.variables), providers: [], origin: "api" }, inspect, run: asRun } };
        }
        ctrl.addModuleTask(spec);
        log.info(`task '${spec.name}': created through the API`, { task: spec.name, module: spec.module });
        const body: Record<string, unknown> = { task: taskToCts(existing(spec.name)) };
        if (run === "now" && spec.enabled !== false) {
          const outcome = await ctrl.runNow(spec.name);
          // A plan held by the task's guards (or approval "always") is what the task asked for, not a failure.
          if (outcome.outcome === "held" && outcome.hold) {
            body.run = { ...runOf(outcome), held: heldToApi(outcome.hold) };
            return { status: 201, body };
          }
          if (!outcome.ok) throw failed(outcome, `task '${spec.name}' was created but its first run failed (fix it with PATCH or delete it)`);
          body.run = runOf(outcome);
        }
        return { status: 201, body };
      }),
    );
  }

  async function patchTask(m: Match, body: BodyReader): Promise<Answer> {
    const name = m.task!;
    const [{ parseTask }, { parsePatchBody, patchedTask }] = await Promise.all([requestSchemas(), patchSchemas()]);
    const patch = parsePatchBody(await decodePatchRequest(await body()), name);
    const run = m.query.get("run");
    return locks.run(name, () =>
      guard(async () => {
        const v = existing(name);
        if (Object.keys(patch.changes).length > 0) {
          if (v.origin !== "api" || !v.spec)
            throw new ApiError(400, `task '${name}' is defined in code (${v.className}); through the API only 'enabled' can change. Change it in cts.config.ts and restart.`);
          const spec = parseTask(patchedTask(specToCts(v.spec), patch), "task", { driver: deps.driver ?? "terraform" });
          if (run === "inspect") return { status: 200, body: { inspect: inspectOf(await ctrl.dryRunModuleTask(spec)) } };
          await ctrl.replaceModuleTask(name, spec);
          log.info(`task '${name}': replaced through the API`, { task: name, fields: Object.keys(patch.changes).join(",") });
          // A changed spec means changed infrastructure: without run=now it runs in the background.
          if (run !== "now" && spec.enabled !== false) void ctrl.runNow(name).catch(() => undefined);
        } else if (run === "inspect") {
          if (patch.enabled === false) return { status: 200, body: { inspect: { changes_present: false, plan: `Disabling task '${name}' changes no infrastructure.` } } };
          return { status: 200, body: { inspect: inspectOf(await ctrl.planTask(name)) } };
        } else if (patch.enabled !== undefined) {
          // With run=now the run below is the one that reports; no second, queued run.
          await ctrl.setEnabled(name, patch.enabled, { run: run !== "now" });
          log.info(`task '${name}': ${patch.enabled ? "enabled" : "disabled"} through the API`, { task: name });
        }
        const body: Record<string, unknown> = {};
        if (run === "now" && existing(name).enabled) {
          const outcome = await ctrl.runNow(name);
          if (!outcome.ok) throw failed(outcome, `running task '${name}' failed`);
          body.run = runOf(outcome);
        }
        return { status: 200, body: { ...body, task: taskToCts(existing(name)) } };
      }),
    );
  }

  async function deleteTask(m: Match): Promise<Answer> {
    const name = m.task!;
    const destroy = m.query.get("destroy") === "true";
    return locks.run(name, () =>
      guard(async () => {
        existing(name);
        log.info(`task '${name}': deleting through the API${destroy ? " (destroying its infrastructure first)" : ""}`, { task: name });
        const outcome = await ctrl.deleteTask(name, { destroy });
        return { status: 202, body: destroy ? { destroyed: outcome?.result?.summary.destroy ?? 0 } : {} };
      }),
    );
  }

  async function driftCheck(m: Match): Promise<Answer> {
    const name = m.task!;
    existing(name);
    const outcome = await guard(() => ctrl.checkDrift(name));
    if (!outcome.ok) throw failed(outcome, `the drift check of task '${name}' failed`);
    const d = outcome.drift;
    return {
      status: 200,
      body: {
        drift: {
          task: name,
          status: d?.state ?? outcome.outcome,
          changes_present: d?.state === "drifted" || d?.state === "corrected",
          ...(d?.changes ? { changes: d.changes } : {}),
          ...(d?.applied ? { applied: d.applied } : {}),
          ...(d ? { checked_at: d.checkedAt } : {}),
          plan: d?.changes ? (outcome.result?.output ?? "") : "",
        },
      },
    };
  }

  /** POST /v1/tasks/{name}/approve: applies exactly the held plan (or checks the new one when the inputs changed). */
  async function approve(m: Match): Promise<Answer> {
    const name = m.task!;
    return locks.run(name, () =>
      guard(async () => {
        existing(name);
        log.info(`task '${name}': held plan approved through the API`, { task: name });
        const outcome = await ctrl.approve(name);
        if (!outcome.ok && outcome.outcome !== "held") throw failed(outcome, `applying the approved plan of task '${name}' failed`);
        return { status: 200, body: { approve: { task: name, ...runOf(outcome), ...(outcome.hold ? { held: heldToApi(outcome.hold) } : {}) } } };
      }),
    );
  }

  /** POST /v1/tasks/{name}/reject: discards the held plan. */
  async function reject(m: Match): Promise<Answer> {
    const name = m.task!;
    return locks.run(name, () =>
      guard(async () => {
        existing(name);
        const held = await ctrl.reject(name);
        log.info(`task '${name}': held plan rejected through the API`, { task: name });
        return { status: 200, body: { reject: { task: name, discarded: heldToApi(held) } } };
      }),
    );
  }

  const dispatch = async (m: Match, body: BodyReader): Promise<Answer> => {
    switch (m.route) {
      case "health": {
        const problem = await deps.health?.();
        if (problem) throw new ApiError(503, `unhealthy: ${problem}`);
        return { status: 200, body: {} };
      }
      case "status-cluster":
        if (!deps.cluster) throw new ApiError(405, "high availability is not configured on this instance, so there is no cluster status. Run cts with high availability to use this endpoint.");
        return { status: 200, body: await guard(deps.cluster) };
      case "status":
        return { status: 200, body: overallStatus(ctrl.taskNames().flatMap((n) => ctrl.view(n) ?? []), deps.consul) };
      case "status-tasks": {
        if (m.task) existing(m.task);
        const include = m.query.get("include") === "events";
        const filter = m.query.get("status");
        const out: Record<string, CtsTaskStatus> = {};
        for (const name of m.task ? [m.task] : ctrl.taskNames()) {
          const v = ctrl.view(name);
          if (!v || (filter && v.status !== filter)) continue;
          out[name] = taskStatus(v, ctrl.events.list(name), include);
        }
        return { status: 200, body: out };
      }
      case "tasks":
        if (m.method === "POST") return createTask(m, body);
        return { status: 200, body: { tasks: ctrl.taskNames().flatMap((n) => ctrl.view(n) ?? []).map(taskToCts) } };
      case "metrics":
        // Not JSON: app.ts answers it before this dispatch.
        throw new ApiError(404, "metrics are not served by this API.");
      case "task-drift":
        return driftCheck(m);
      case "task-approve":
        return approve(m);
      case "task-reject":
        return reject(m);
      case "ui":
        throw new ApiError(404, "the dashboard is served by the app, not the handlers.");
      case "task":
        if (m.method === "PATCH") return patchTask(m, body);
        if (m.method === "DELETE") return deleteTask(m);
        return { status: 200, body: { task: taskToCts(existing(m.task!)) } };
    }
  };

  /** `PATCH {"pin": …}`: any member stores the pin; the owners move when every member sees it. */
  async function pinTask(task: string, raw: Record<string, unknown>): Promise<Answer> {
    const { pin, ...rest } = raw;
    if (Object.keys(rest).length > 0) throw new ApiError(400, `send "pin" alone: {"pin":"<member id>"} moves the task to that member, {"pin":null} lets the cluster place it.`);
    if (pin !== null && typeof pin !== "string") throw new ApiError(400, `"pin" must be a member id (see GET /v1/status/cluster) or null.`);
    existing(task);
    await guard(() => deps.pin!(task, pin));
    return { status: 200, body: { task: { name: task, pin } } };
  }

  return async (m, body) => {
    const changing = (m.route === "tasks" || m.route === "task" || m.route === "task-drift" || m.route === "task-approve" || m.route === "task-reject") && m.method !== "GET";
    if (deps.pin && m.route === "task" && m.method === "PATCH") {
      const raw = await body();
      if (raw !== null && typeof raw === "object" && !Array.isArray(raw) && "pin" in raw) return pinTask(m.task!, raw as Record<string, unknown>);
      body = async () => raw;
    }
    const action = m.route === "task-approve" ? "approve" : m.route === "task-reject" ? "reject" : m.route === "task-drift" ? "drift" : undefined;
    if (deps.beforeChange && changing) await guard(async () => deps.beforeChange!({ method: m.method, ...(m.task ? { task: m.task } : {}), ...(action ? { action } : {}) }));
    if (!changing || !deps.afterChange) return dispatch(m, body);
    try {
      return await dispatch(m, body);
    } finally {
      await deps.afterChange().catch(() => undefined);
    }
  };
}
