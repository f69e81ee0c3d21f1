/**
 * Imported first by main.ts: for a command that runs the daemon (`cts watch`, `cts start` without
 * `-once`/`-inspect`) the synthesis worker starts before the CLI loads the rest of its modules, so
 * the worker's start overlaps the main thread's (the worker reads the config, see
 * src/synth/daemon-config.ts). Any other command starts nothing.
 */
import { startWorkerEarly } from "../synth/worker-start.ts";

/** Whether these arguments (process.argv) run the daemon, so its synthesis worker may start at once. */
export function runsDaemon(argv: readonly string[]): boolean {
  const args = argv.slice(2);
  const first = args[0] ?? "";
  if (args.some((a) => /^(-h|--help|--version|-V)$/.test(a))) return false;
  if (first === "watch") return true;
  // `cts start …` or CTS's bare `cts -config-file …`, unless it runs once or inspects (those load the config in process).
  if (first !== "start" && !/^--?config-(file|dir)(=|$)/.test(first)) return false;
  return !args.some((a) => /^--?(once|inspect|inspect-task)(=|$)/.test(a));
}

if (runsDaemon(process.argv)) startWorkerEarly();
