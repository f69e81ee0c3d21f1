import { createInterface } from "node:readline";
import { CtsError } from "../errors/cts-error.ts";

/** Where the question is asked (stdin/stderr by default; tests pass their own streams). */
export interface ConfirmIo {
  input: NodeJS.ReadableStream & { isTTY?: boolean };
  output: NodeJS.WritableStream;
}

/**
 * Asks before changing infrastructure, as Terraform does: only "yes" approves. Without a terminal
 * there is nobody to answer, so it refuses (pointing at --auto-approve) instead of guessing.
 */
export async function confirm(question: string, what: string, opts: { autoApprove?: boolean; io?: ConfirmIo } = {}): Promise<boolean> {
  if (opts.autoApprove) return true;
  const io = opts.io ?? { input: process.stdin, output: process.stderr };
  if (!io.input.isTTY)
    throw new CtsError("APPROVAL_REQUIRED", "usage", `Refusing to ${what} without approval: stdin is not a terminal, so nobody can answer. Re-run with --auto-approve to approve non-interactively.`);
  const rl = createInterface({ input: io.input, output: io.output, terminal: false });
  try {
    const answer = await new Promise<string | undefined>((resolve) => {
      rl.once("close", () => resolve(undefined));
      rl.question(`${question}\n  Only 'yes' will be accepted to approve.\n\n  Enter a value: `, resolve);
    });
    return answer?.trim() === "yes";
  } finally {
    rl.close();
  }
}
