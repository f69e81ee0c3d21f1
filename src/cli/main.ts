#!/usr/bin/env -S MALLOC_ARENA_MAX=1 node --max-semi-space-size=1
// First: the daemon's synthesis worker starts while the rest of the CLI loads (early-start.ts).
import "./early-start.ts";
import { Command, CommanderError } from "commander";
import { CtsError, doctorHint } from "../errors/cts-error.ts";
import { userStackText } from "../errors/user-frames.ts";
import { ctsStartExitCode, ctsTaskArgv, ctsTaskExitCode } from "../cts/cli/flags.ts";
import { registerTask } from "./task.ts";
import { registerStatus } from "./status.ts";
import { registerDrift } from "./drift.ts";
import { registerApprovals } from "./approve.ts";
import { registerHistory } from "./history.ts";
import { endQuietlyOnBrokenPipe, say } from "./output.ts";
import { VERSION } from "../version.ts";
import { normalizeStartArgs } from "./start-args.ts";

// `cts … | head`: a reader that goes away ends the output quietly (exit 141), never with a stack trace.
endQuietlyOnBrokenPipe();

// CTS's spelling: `cts start -config-file x.hcl -once` (one dash, as Go's flag package allows).
process.argv = normalizeStartArgs(process.argv);

const program = new Command()
  .name("cts")
  .description("Consul-Terraform-Sync with tasks as TypeScript classes")
  .version(VERSION)
  .showHelpAfterError()
  .exitOverride();

// `cts task`, `cts status`, `cts drift`, `cts approve` and `cts reject` only talk HTTP to a daemon: they skip loading the runtime.
// The other commands load only their own module (the daemon keeps no code of init, synth or doctor
// resident); help and unknown commands load them all.
const LOCAL_COMMANDS: Record<string, () => Promise<(p: Command) => void>> = {
  start: async () => (await import("./start.ts")).registerStart,
  synth: async () => (await import("./synth.ts")).registerSynth,
  snapshot: async () => (await import("./snapshot.ts")).registerSnapshot,
  diff: async () => (await import("./diff.ts")).registerDiff,
  init: async () => (await import("./init.ts")).registerInit,
  watch: async () => (await import("./run.ts")).registerRun,
  once: async () => (await import("./run.ts")).registerRun,
  inspect: async () => (await import("./run.ts")).registerRun,
  doctor: async () => (await import("./doctor.ts")).registerDoctor,
};
const command = process.argv[2] ?? "";
if (!["task", "status", "drift", "approve", "reject", "history"].includes(command)) {
  const wanted = LOCAL_COMMANDS[command] ? [LOCAL_COMMANDS[command]] : [...new Set(Object.values(LOCAL_COMMANDS))];
  const registrars = new Set(await Promise.all(wanted.map((load) => load())));
  for (const register of registrars) register(program);
}
registerTask(program);
registerStatus(program);
registerDrift(program);
registerApprovals(program);
registerHistory(program);

// `cts task …` takes CTS's flag spellings and exits with CTS's codes (src/cts/cli/flags.ts).
const ctsTask = process.argv[2] === "task";
// `cts start` is CTS's own command line: it exits with CTS's codes as well.
const ctsStart = process.argv[2] === "start";
try {
  await program.parseAsync(ctsTask ? ctsTaskArgv(process.argv) : process.argv);
  if (ctsStart && process.exitCode === 1) process.exitCode = ctsStartExitCode(undefined);
} catch (err) {
  if (err instanceof CommanderError) {
    process.exitCode = ctsTask ? ctsTaskExitCode(err) : ctsStart ? ctsStartExitCode(err) : err.exitCode === 0 ? 0 : 2;
  } else if (err instanceof CtsError) {
    say(`error: ${err.message}${doctorHint(err)}${userStackText(err)}\n`, process.stderr);
    process.exitCode = ctsTask ? ctsTaskExitCode(err) : ctsStart ? ctsStartExitCode(err) : err.exitCode;
  } else {
    say(`internal error: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`, process.stderr);
    process.exitCode = 70;
  }
}
