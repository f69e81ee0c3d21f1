import { CtsError } from "../errors/cts-error.ts";

/**
 * How deeply task data may nest, counting objects and lists (`{"a":[1]}` is 2 levels): API request
 * bodies, task variables, provider settings. Deeper data is refused where it enters, so nothing
 * downstream sees it; `JSON.stringify` alone overflows the stack at a few thousand levels.
 */
export const MAX_DATA_DEPTH = 64;

/**
 * How deep our recursive walks go (redaction, sorted JSON, hashing, HCL and config readers) before
 * they refuse with DATA_TOO_DEEP instead of overflowing the stack: MAX_DATA_DEPTH plus room for the
 * documents task data is wrapped in (root module, stored state, answers) and for the JSON a task
 * class builds, which no entry check sees.
 */
export const MAX_WALK_DEPTH = 256;

interface Frame {
  value: object;
  depth: number;
  parent: Frame | undefined;
  key: string | number;
}

/**
 * Where a JSON-like value first nests deeper than `limit` levels, as a path from `root`
 * (`task.variables.v[0]`); undefined when it does not. Iterative, so any depth is safe to check, and
 * it stops at the first level too deep.
 */
export function tooDeepAt(value: unknown, limit: number, root = ""): string | undefined {
  if (typeof value !== "object" || value === null) return undefined;
  const stack: Frame[] = [{ value, depth: 1, parent: undefined, key: "" }];
  while (stack.length) {
    const frame = stack.pop()!;
    if (frame.depth > limit) return pathOf(frame, root);
    const v = frame.value;
    const keys: Array<string | number> = Array.isArray(v) ? v.map((_, i) => i) : Object.keys(v);
    // Pushed last to first, so the first place found is the first in the document.
    for (let i = keys.length - 1; i >= 0; i--) {
      const child = (v as Record<string | number, unknown>)[keys[i]!];
      if (typeof child === "object" && child !== null) stack.push({ value: child, depth: frame.depth + 1, parent: frame, key: keys[i]! });
    }
  }
  return undefined;
}

const PLAIN_KEY = /^[A-Za-z_][A-Za-z0-9_-]*$/;

/** `a.b[0]["c d"]`, cut after 100 characters (a path 10,000 levels deep stays readable; its start says where). */
function pathOf(frame: Frame, root: string): string {
  const parts: string[] = [];
  for (let f: Frame | undefined = frame; f?.parent; f = f.parent)
    parts.push(typeof f.key === "number" ? `[${f.key}]` : PLAIN_KEY.test(f.key) ? `.${f.key}` : `[${JSON.stringify(f.key.slice(0, 40))}]`);
  const path = (root + parts.reverse().join("")).replace(/^\./, "");
  return path.length > 100 ? `${path.slice(0, 100)}…` : path || "(the value itself)";
}

/** DATA_TOO_DEEP for `what` ("the Terraform JSON of the task", "a value to redact"), nested past `limit` levels. */
export function dataTooDeep(what: string, options: { task?: string; at?: string; limit?: number } = {}): CtsError {
  const limit = options.limit ?? MAX_WALK_DEPTH;
  return new CtsError(
    "DATA_TOO_DEEP",
    "usage",
    `${what} nests deeper than ${limit} levels of objects and lists${options.at ? ` (at ${options.at})` : ""}. Flatten it, or pass a deep value as a JSON string and decode it in Terraform with jsondecode().`,
    { ...(options.task ? { task: options.task } : {}), detail: { limit, ...(options.at ? { at: options.at } : {}) } },
  );
}

/** For recursive walks: throws DATA_TOO_DEEP once the walk is `depth` levels down, past MAX_WALK_DEPTH. */
export function checkWalkDepth(depth: number, what: string): void {
  if (depth > MAX_WALK_DEPTH) throw dataTooDeep(what);
}

/** Throws DATA_TOO_DEEP (naming the place) when `value` nests deeper than `limit` levels. */
export function assertDepth(value: unknown, what: string, options: { task?: string; limit?: number } = {}): void {
  const limit = options.limit ?? MAX_WALK_DEPTH;
  const at = tooDeepAt(value, limit);
  if (at !== undefined) throw dataTooDeep(what, { ...options, limit, at });
}
