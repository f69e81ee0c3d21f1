#!/usr/bin/env node
import { Command, CommanderError } from "commander";
import { CtsError } from "../errors.ts";
import { registerTask } from "./task.ts";
import { registerStatus } from "./status.ts";
import { registerDrift } from "./drift.ts";
import { say } from "./output.ts";
import { VERSION } from "../version.ts";
import { doctorHint } from "../doctor/check.ts";

const program = new Command()
  .name("cts")
  .description("Consul-Terraform-Sync with tasks as TypeScript classes")
  .version(VERSION)
  .showHelpAfterError()
  .exitOverride();

// `cts task`, `cts status` and `cts drift` only talk HTTP to a daemon: they skip loading the runtime, whose
// cdktf import alone costs seconds of CPU on every call.
if (!["task", "status", "drift"].includes(process.argv[2] ?? "")) {
  const [{ registerSynth }, { registerInit }, { registerRun }, { registerDoctor }] = await Promise.all([
    import("./synth.ts"),
    import("./init.ts"),
    import("./run.ts"),
    import("./doctor.ts"),
  ]);
  registerSynth(program);
  registerInit(program);
  registerRun(program);
  registerDoctor(program);
}
registerTask(program);
registerStatus(program);
registerDrift(program);

try {
  await program.parseAsync(process.argv);
} catch (err) {
  if (err instanceof CommanderError) {
    process.exitCode = err.exitCode === 0 ? 0 : 2;
  } else if (err instanceof CtsError) {
    say(`error: ${err.message}${doctorHint(err)}\n`, process.stderr);
    process.exitCode = err.exitCode;
  } else {
    say(`internal error: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`, process.stderr);
    process.exitCode = 70;
  }
}
