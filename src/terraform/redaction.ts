import { MAX_WALK_DEPTH } from "../values/data-depth.ts";
import { CtsError } from "../errors/cts-error.ts";
import type { RunResult } from "./types.ts";

type Redact = (text: string) => string;

/** Shown instead of detail nested past MAX_WALK_DEPTH: redacting an error must not throw in its place. */
const TOO_DEEP = "[nested too deep to show]";

function deep(v: unknown, redact: Redact, depth = 0): unknown {
  if (typeof v === "string") return redact(v);
  if (typeof v === "object" && v !== null && depth >= MAX_WALK_DEPTH) return TOO_DEEP;
  if (Array.isArray(v)) return v.map((x) => deep(x, redact, depth + 1));
  if (v && typeof v === "object" && Object.getPrototypeOf(v) === Object.prototype)
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, deep(x, redact, depth + 1)]));
  return v;
}

/** Whether two plain values print alike (false when one is too deep to print). */
function sameJson(a: unknown, b: unknown): boolean {
  try {
    return JSON.stringify(a) === JSON.stringify(b);
  } catch {
    return false;
  }
}

/** A driver error with secrets scrubbed from its message and detail (code, category, task kept). */
export function redactedError(err: unknown, redact: Redact): unknown {
  if (!(err instanceof CtsError)) return err;
  const message = redact(err.message);
  const detail = deep(err.detail, redact) as Record<string, unknown>;
  if (message === err.message && sameJson(detail, err.detail)) return err;
  // The cause is dropped when it could repeat the unredacted text (it is our own error then).
  const cause = err.cause instanceof CtsError ? undefined : err.cause;
  return new CtsError(err.code, err.category, message, { ...(err.task ? { task: err.task } : {}), ...(cause !== undefined ? { cause } : {}), detail });
}

/** A run result whose plan/apply text and resource addresses (a for_each key can be catalog text) have secrets scrubbed. */
export function redactedResult(result: RunResult, redact: Redact): RunResult {
  const resources = result.resources?.map((r) => ({ address: redact(r.address), action: r.action }));
  // Outputs a module did not mark sensitive can still hold a known secret (a provider token passed through).
  const outputs = result.outputs ? (deep(result.outputs, redact) as RunResult["outputs"]) : undefined;
  return { ...result, output: redact(result.output), ...(resources ? { resources } : {}), ...(outputs ? { outputs } : {}) };
}

/** `done` with secrets scrubbed from its result or its error; `done` itself when there is no redactor. */
export function redacting(done: Promise<RunResult>, redact: Redact | undefined): Promise<RunResult> {
  if (!redact) return done;
  return done.then(
    (r) => redactedResult(r, redact),
    (err: unknown) => Promise.reject(redactedError(err, redact)),
  );
}
