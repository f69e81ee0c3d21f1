import { taskNameProblem } from "../task/validate.ts";
import { ApiError } from "./http-io.ts";

/** The API's routes. */
export type RouteName = "status" | "status-tasks" | "status-cluster" | "tasks" | "task" | "task-drift" | "task-approve" | "task-reject" | "health" | "metrics" | "ui";

/** A request matched to a route. */
export interface Match {
  route: RouteName;
  method: string;
  /** The task name from the path (already validated), for routes that take one. */
  task?: string;
  query: URLSearchParams;
}

const METHODS: Record<RouteName, string[]> = {
  status: ["GET"],
  "status-tasks": ["GET"],
  "status-cluster": ["GET"],
  tasks: ["GET", "POST"],
  task: ["GET", "PATCH", "DELETE"],
  "task-drift": ["POST"],
  "task-approve": ["POST"],
  "task-reject": ["POST"],
  health: ["GET"],
  metrics: ["GET"],
  ui: ["GET"],
};

/** Query parameters each route and method accepts, with their allowed values (undefined = any). */
const QUERY: Partial<Record<`${RouteName} ${string}`, Record<string, readonly string[]>>> = {
  "status-tasks GET": { include: ["events"], status: ["successful", "errored", "critical", "unknown"] },
  "tasks POST": { run: ["now", "inspect"] },
  "task PATCH": { run: ["now", "inspect"] },
  "task DELETE": { destroy: ["true", "false"] },
};

/**
 * Matches method and raw path. The path is NOT normalized (no URL parsing): `/v1/tasks/../x` must
 * reach the task-name check and be refused there, not quietly turn into `/v1/x`.
 */
export function route(method: string, rawUrl: string): Match {
  const q = rawUrl.indexOf("?");
  const path = q < 0 ? rawUrl : rawUrl.slice(0, q);
  const query = new URLSearchParams(q < 0 ? "" : rawUrl.slice(q + 1));
  let name: RouteName | undefined;
  let rawTask: string | undefined;
  if (path === "/v1/status") name = "status";
  else if (path === "/v1/status/tasks") name = "status-tasks";
  else if (path.startsWith("/v1/status/tasks/")) [name, rawTask] = ["status-tasks", path.slice("/v1/status/tasks/".length)];
  else if (path === "/v1/status/cluster") name = "status-cluster";
  else if (path === "/v1/tasks") name = "tasks";
  else if (/^\/v1\/tasks\/[^/]+\/drift$/.test(path)) [name, rawTask] = ["task-drift", path.slice("/v1/tasks/".length, -"/drift".length)];
  else if (/^\/v1\/tasks\/[^/]+\/approve$/.test(path)) [name, rawTask] = ["task-approve", path.slice("/v1/tasks/".length, -"/approve".length)];
  else if (/^\/v1\/tasks\/[^/]+\/reject$/.test(path)) [name, rawTask] = ["task-reject", path.slice("/v1/tasks/".length, -"/reject".length)];
  else if (path.startsWith("/v1/tasks/")) [name, rawTask] = ["task", path.slice("/v1/tasks/".length)];
  else if (path === "/v1/health") name = "health";
  else if (path === "/metrics") name = "metrics";
  else if (path === "/ui" || path.startsWith("/ui/")) name = "ui";
  if (!name)
    throw new ApiError(404, `no route for '${path.slice(0, 200)}'. Routes: /v1/status, /v1/status/tasks[/{name}], /v1/tasks[/{name}], /v1/tasks/{name}/drift, /v1/tasks/{name}/approve, /v1/tasks/{name}/reject, /v1/health, /v1/status/cluster, /metrics, /ui.`);
  const allowed = METHODS[name];
  if (!allowed.includes(method)) {
    throw new ApiError(405, `'${method}' is not supported on '${path.slice(0, 200)}'. Use ${allowed.join(" or ")}.`, { allow: allowed.join(", ") });
  }
  const match: Match = { route: name, method, query };
  if (rawTask !== undefined) match.task = taskFromPath(rawTask);
  checkQuery(match);
  return match;
}

function taskFromPath(raw: string): string {
  let name: string;
  try {
    name = decodeURIComponent(raw);
  } catch {
    throw new ApiError(400, `the task name in the path ('${raw.slice(0, 60)}') is not valid percent-encoding.`);
  }
  const problem = taskNameProblem(name);
  if (problem) throw new ApiError(400, `task name ${problem}`);
  return name;
}

function checkQuery(m: Match): void {
  const spec = QUERY[`${m.route} ${m.method}`] ?? {};
  for (const key of new Set(m.query.keys())) {
    const allowed = spec[key];
    if (!allowed) {
      const known = Object.keys(spec);
      throw new ApiError(400, `unknown query parameter '${key.slice(0, 60)}'. ${known.length ? `This route takes: ${known.join(", ")}.` : "This route takes none."}`);
    }
    const values = m.query.getAll(key);
    if (values.length !== 1) throw new ApiError(400, `query parameter '${key}' is given ${values.length} times. Give it once.`);
    const value = values[0]!.toLowerCase();
    if (!allowed.includes(value)) throw new ApiError(400, `unsupported value '${values[0]!.slice(0, 60)}' for '${key}'. Use ${allowed.map((a) => `${key}=${a}`).join(" or ")}.`);
    m.query.set(key, value);
  }
}
