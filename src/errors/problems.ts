import { CtsError, type ErrorCode } from "./cts-error.ts";

// Config, task and API-setting checks all report the same way: every problem at once, each naming
// its field and the fix, so one load shows the whole list instead of the first mistake.

/** A validation problem: the field (dotted path) and a message with the fix. */
export interface Problem {
  field: string;
  message: string;
}

/** Throws one CtsError listing every problem, naming the file (or source) and the field. */
export function throwProblems(where: string, problems: Problem[], code: ErrorCode = "CONFIG_INVALID"): void {
  if (problems.length === 0) return;
  const lines = problems.map((p) => `${where}: ${p.field} ${p.message}`);
  throw new CtsError(code, "usage", lines.join("\n"), { detail: { problems } });
}
