import { Command, CommanderError } from "commander";
import { CtsError } from "../errors.ts";
import { registerInit } from "./init.ts";
import { registerSynth } from "./synth.ts";
import { registerRun } from "./run.ts";

const program = new Command()
  .name("cts")
  .description("Consul-Terraform-Sync with tasks as TypeScript classes")
  .version("0.1.0")
  .showHelpAfterError()
  .exitOverride();

registerSynth(program);
registerInit(program);
registerRun(program);

try {
  await program.parseAsync(process.argv);
} catch (err) {
  if (err instanceof CommanderError) {
    process.exitCode = err.exitCode === 0 ? 0 : 2;
  } else if (err instanceof CtsError) {
    process.stderr.write(`error: ${err.message}\n`);
    process.exitCode = err.exitCode;
  } else {
    process.stderr.write(`internal error: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exitCode = 70;
  }
}
