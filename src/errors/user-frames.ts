import { dirname, isAbsolute, relative, sep } from "node:path";
import { fileURLToPath } from "node:url";

/** Where in the user's code an error was thrown: the first frame outside cts, and the first few such frames. */
export interface UserCode {
  /** `file:line:column` of the first user frame (relative to the working directory when inside it). */
  at: string;
  /** The first user frames, each `name (file:line:column)` or `file:line:column`. */
  frames: string[];
}

// cts's own code: src/ when run from source, dist/ when installed (this file sits in src/errors/ or dist/errors/).
const OWN_ROOT = dirname(dirname(dirname(fileURLToPath(import.meta.url))));
const OWN_DIRS = [`${OWN_ROOT}${sep}src${sep}`, `${OWN_ROOT}${sep}dist${sep}`];

// "    at name (location)" or "    at location"; `location` ends in ":line:column".
const FRAME = /^\s*at (?:(.*?) \()?(.+?):(\d+):(\d+)\)?$/;

/**
 * The user's part of an error's stack: frames in cts's own src/dist, in node_modules or in Node
 * itself are folded away, so what is left names the task file and line (tsx maps .ts lines with
 * source maps). Follows `cause` when the error itself has no user frame. Undefined when no frame
 * is the user's.
 */
export function userCode(err: unknown, limit = 3, cwd = process.cwd()): UserCode | undefined {
  for (let e = err, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const stack = (e as { stack?: unknown }).stack;
    if (typeof stack !== "string") continue;
    const frames = userFrames(stack, cwd).slice(0, limit);
    if (frames.length) return { at: frames[0]!.location, frames: frames.map((f) => (f.name ? `${f.name} (${f.location})` : f.location)) };
  }
  return undefined;
}

/** Every frame of a V8 stack text that belongs to the user's code, in stack order. */
export function userFrames(stack: string, cwd = process.cwd()): Array<{ name?: string; location: string }> {
  const out: Array<{ name?: string; location: string }> = [];
  for (const line of stack.split("\n")) {
    const m = FRAME.exec(line);
    if (!m) continue;
    const file = filePath(m[2]!);
    if (!file || !isUserFile(file)) continue;
    const rel = relative(cwd, file);
    const shown = rel && !rel.startsWith("..") && !isAbsolute(rel) ? rel : file;
    out.push({ ...(m[1] ? { name: m[1] } : {}), location: `${shown}:${m[3]}:${m[4]}` });
  }
  return out;
}

/** A frame's file as a path (file URLs decoded, tsx's `?tsx-namespace=…` query dropped); undefined for Node's own and native frames. */
function filePath(location: string): string | undefined {
  if (location.startsWith("file://")) {
    try {
      return fileURLToPath(location.replace(/\?.*$/, ""));
    } catch {
      return undefined;
    }
  }
  return isAbsolute(location) ? location.replace(/\?.*$/, "") : undefined;
}

function isUserFile(file: string): boolean {
  return !file.split(sep).includes("node_modules") && !OWN_DIRS.some((d) => file.startsWith(d));
}

/** Where in the user's code a failure was thrown, from its detail (`at`, `userStack`) as `{ at, stack }` for events, JSON output and log fields; empty when cts's own code failed. */
export function userCodeFields(err: { detail?: Record<string, unknown> } | undefined): { at?: string; stack?: string[] } {
  const at = err?.detail?.at;
  const stack = err?.detail?.userStack;
  return { ...(typeof at === "string" ? { at } : {}), ...(Array.isArray(stack) ? { stack: stack.map(String) } : {}) };
}

/** The user's frames an error carries (`detail.userStack`) as indented `at …` lines for a terminal, each after a newline; "" when none. */
export function userStackText(err: { detail?: Record<string, unknown> } | undefined): string {
  const frames = err?.detail?.userStack;
  return Array.isArray(frames) ? frames.map((f) => `\n    at ${String(f)}`).join("") : "";
}
