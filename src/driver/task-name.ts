import { resolve, sep } from "node:path";
import { CtsError } from "../errors/cts-error.ts";

// Terraform accepts a workspace name only when url.PathEscape leaves it unchanged: these are the
// characters Go does not escape in a path segment. Anything else would fail later inside tofu.
const WORKSPACE_SAFE = /^[A-Za-z0-9\-_.~$&+,;=:@]+$/;
const MAX_NAME_BYTES = 200;

/**
 * Why a task or file name is unusable as a folder/file name, or undefined when it is fine: the one
 * rule both drivers hold a task's name to (each keeps a folder per task; the local driver also
 * makes it a workspace name).
 */
export function nameProblem(name: string): string | undefined {
  if (name.length === 0) return "it is empty";
  if (name === "." || name === "..") return "it refers to a parent or current folder";
  if (name.includes("/") || name.includes("\\")) return "it contains a path separator";
  if (name.startsWith(".")) return "it starts with a dot (hidden files are reserved for cts)";
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(name)) return "it contains a control character";
  if (/\s/.test(name)) return "it contains whitespace";
  if (Buffer.byteLength(name) > MAX_NAME_BYTES) return `it is longer than ${MAX_NAME_BYTES} bytes`;
  if (!WORKSPACE_SAFE.test(name)) return "it contains characters Terraform refuses in a workspace name (use letters, digits, '-', '_' and '.')";
  return undefined;
}

/** Throws TASK_NAME_INVALID unless the task name is safe as a folder and a workspace name. */
export function validateTaskName(task: string): void {
  const problem = nameProblem(task);
  if (problem) {
    throw new CtsError(
      "TASK_NAME_INVALID",
      "usage",
      `Task name ${JSON.stringify(task)} cannot be used: ${problem}. Name tasks with letters, digits, '-' and '_' (e.g. "web-lb").`,
      { detail: { name: task } },
    );
  }
}

/** `<root>/<name>`, refusing any result that is not strictly inside root (defence in depth). */
export function childPath(root: string, name: string, task: string): string {
  const base = resolve(root);
  const full = resolve(base, name);
  if (!full.startsWith(base + sep) || full.slice(base.length + 1).includes(sep)) {
    throw new CtsError("TASK_NAME_INVALID", "usage", `path ${JSON.stringify(name)} escapes the working directory '${base}'.`, {
      task,
      detail: { root: base, name },
    });
  }
  return full;
}

/** A task's folder under a driver's working root: `<root>/<task>`, for a name `validateTaskName` accepts. */
export function taskFolder(root: string, task: string): string {
  validateTaskName(task);
  return childPath(root, task, task);
}
