#!/usr/bin/env node
import { Command, CommanderError } from "commander";
import { CtsError, doctorHint } from "../errors.ts";
import { ctsStartExitCode, ctsTaskArgv, ctsTaskExitCode } from "./cts-flags.ts";
import { registerTask } from "./task.ts";
import { registerStatus } from "./status.ts";
import { registerDrift } from "./drift.ts";
import { say } from "./output.ts";
import { VERSION } from "../version.ts";
import { normalizeStartArgs } from "./start-args.ts";

// CTS's spelling: `cts start -config-file x.hcl -once` (one dash, as Go's flag package allows).
process.argv = normalizeStartArgs(process.argv);

const program = new Command()
  .name("cts")
  .description("Consul-Terraform-Sync with tasks as TypeScript classes")
  .version(VERSION)
  .showHelpAfterError()
  .exitOverride();

// `cts task`, `cts status` and `cts drift` only talk HTTP to a daemon: they skip loading the runtime, whose
// cdktf import alone costs seconds of CPU on every call.
if (!["task", "status", "drift"].includes(process.argv[2] ?? "")) {
  const [{ registerSynth }, { registerInit }, { registerRun }, { registerDoctor }, { registerStart }] = await Promise.all([
    import("./synth.ts"),
    import("./init.ts"),
    import("./run.ts"),
    import("./doctor.ts"),
    import("./start.ts"),
  ]);
  registerStart(program);
  registerSynth(program);
  registerInit(program);
  registerRun(program);
  registerDoctor(program);
}
registerTask(program);
registerStatus(program);
registerDrift(program);

// `cts task …` takes CTS's flag spellings and exits with CTS's codes (cts-flags.ts).
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
    say(`error: ${err.message}${doctorHint(err)}\n`, process.stderr);
    process.exitCode = ctsTask ? ctsTaskExitCode(err) : ctsStart ? ctsStartExitCode(err) : err.exitCode;
  } else {
    say(`internal error: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`, process.stderr);
    process.exitCode = 70;
  }
}
