import { chainProblems, downstreamOf, type ChainNode } from "../task/chains.ts";
import { ApiError } from "./http-error.ts";

/**
 * Task chains through the API (cts's own `cts_after`, CTS has none): a created or changed task's
 * `after` is checked against the daemon's tasks, config and API tasks alike, as a config's tasks
 * are checked when it loads (src/task/chains.ts): each name a task that exists, and no circle.
 * The checks of the value on its own (a list, itself, a name twice) come with the task's others (task-request.ts).
 */

/** The daemon's tasks as the chain checks read them. */
export type ChainTasks = ReadonlyArray<ChainNode>;

/**
 * 400 when `task`'s `after` names a task the daemon does not have (with the name probably meant),
 * or closes a circle (with its path); `tasks` are the daemon's tasks, `task` replacing its namesake.
 */
export function checkTaskChain(task: ChainNode, tasks: ChainTasks, at = "task"): void {
  if (!task.after?.length) return;
  // This task first: a circle's path starts and ends with it.
  const nodes = [task, ...tasks.filter((t) => t.name !== task.name)];
  // Only this task's problems: another task's name that went missing is not this request's fault.
  // The daemon's tasks were free of circles before, so a circle found now runs through this task.
  const problems = chainProblems(nodes, "daemon").filter((p) => p.task === task.name || p.field === "after");
  if (!problems.length) return;
  throw new ApiError(400, `invalid task: ${problems.map((p) => `${at}.cts_after${p.field.slice("after".length)} ${p.message.replace("an `after`", "a `cts_after`")}`).join(" ")}`);
}

/**
 * The message refusing to delete `name` while tasks run after it (409): they would read the
 * outputs of a task that is gone. Undefined when none does.
 */
export function downstreamRefusal(name: string, tasks: ChainTasks): string | undefined {
  const down = downstreamOf(name, tasks).filter((d) => d !== name);
  if (!down.length) return undefined;
  const one = down.length === 1;
  const list = down.map((d) => `'${d}'`).join(", ");
  return (
    `task '${name}' cannot be deleted: ${one ? `task ${list} runs` : `tasks ${list} run`} after it and ${one ? "reads" : "read"} its outputs (${one ? "its" : "their"} cts_after, or after in code, lists '${name}'). ` +
    `Delete ${list} first, or take '${name}' out of ${one ? "its" : "their"} cts_after (PATCH a task created through the API; change a config task in the config and restart), then delete '${name}'.`
  );
}
