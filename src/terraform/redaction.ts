import { CtsError } from "../errors.ts";
import type { RunResult } from "./types.ts";

type Redact = (text: string) => string;

function deep(v: unknown, redact: Redact): unknown {
  if (typeof v === "string") return redact(v);
  if (Array.isArray(v)) return v.map((x) => deep(x, redact));
  if (v && typeof v === "object" && Object.getPrototypeOf(v) === Object.prototype)
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, deep(x, redact)]));
  return v;
}

/** A driver error with secrets scrubbed from its message and detail (code, category, task kept). */
export function redactedError(err: unknown, redact: Redact): unknown {
  if (!(err instanceof CtsError)) return err;
  const message = redact(err.message);
  const detail = deep(err.detail, redact) as Record<string, unknown>;
  if (message === err.message && JSON.stringify(detail) === JSON.stringify(err.detail)) return err;
  // The cause is dropped when it could repeat the unredacted text (it is our own error then).
  const cause = err.cause instanceof CtsError ? undefined : err.cause;
  return new CtsError(err.code, err.category, message, { ...(err.task ? { task: err.task } : {}), ...(cause !== undefined ? { cause } : {}), detail });
}

/** A run result whose plan/apply text has secrets scrubbed. */
export function redactedResult(result: RunResult, redact: Redact): RunResult {
  return { ...result, output: redact(result.output) };
}
