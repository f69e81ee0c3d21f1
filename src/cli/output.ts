import { knownSecrets } from "../secrets/redactor.ts";

/** Renders rows as an aligned text table (first row = header). */
export function table(rows: string[][]): string {
  if (rows.length === 0) return "";
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? "").length)));
  return knownSecrets.redact(rows.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!))).join("  ").trimEnd()).join("\n") + "\n");
}

/** Prints JSON to stdout (known secrets scrubbed). */
export function printJson(value: unknown): void {
  process.stdout.write(JSON.stringify(knownSecrets.redactDeep(value), null, 2) + "\n");
}

/** Writes text to stdout or stderr with every known secret scrubbed (Terraform texts, errors). */
export function say(text: string, stream: NodeJS.WriteStream = process.stdout): void {
  stream.write(knownSecrets.redact(text));
}

/** The exit status of a Unix tool whose reader went away: killed by SIGPIPE (128 + 13). */
export const BROKEN_PIPE_EXIT = 141;

/**
 * A reader that goes away (`cts status | head -1`) ends the output quietly, as a Unix tool's: no
 * stack trace, nothing more written to that stream. The command itself is not cut short (a run or
 * `cts init` finishes what it started, a daemon stops gracefully as on SIGTERM); the process then
 * exits 141, as one killed by SIGPIPE, unless the command failed on its own.
 */
export function endQuietlyOnBrokenPipe(streams: NodeJS.WriteStream[] = [process.stdout, process.stderr]): void {
  let broken = false;
  for (const stream of streams)
    stream.on("error", (err: NodeJS.ErrnoException) => {
      if (err.code !== "EPIPE") throw err;
      stream.write = (() => true) as typeof stream.write;
      if (broken) return;
      broken = true;
      process.once("exit", (code) => {
        if (!code) process.exitCode = BROKEN_PIPE_EXIT;
      });
      // A daemon (cts watch / start) stops as on SIGTERM; other commands finish their work.
      if (process.listenerCount("SIGTERM") > 0) process.kill(process.pid, "SIGTERM");
    });
}
