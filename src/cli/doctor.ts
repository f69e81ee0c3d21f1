import type { Command } from "commander";
import { loadConfig } from "../config/load.ts";
import { formatCheck } from "../doctor/check.ts";
import { runDoctor } from "../doctor/doctor.ts";
import { printJson } from "./output.ts";

/** `cts doctor`: checks everything a run needs, one line per check with its fix; exit 0 only when all pass. */
export function registerDoctor(program: Command): void {
  program
    .command("doctor")
    .description("Check Consul, the token's permissions per task, Terraform, providers, the working dir and the API port")
    .option("-c, --config <file>", "config file (default ./cts.config.ts)")
    .option("--json", "print the results as JSON")
    .action(async (flags: { config?: string; json?: boolean }) => {
      const loaded = await loadConfig(flags.config);
      const results = await runDoctor(loaded, flags.json ? undefined : (r) => process.stdout.write(`${formatCheck(r)}\n`));
      const ok = results.every((r) => r.ok);
      if (flags.json) printJson({ ok, config: loaded.file, checks: results });
      else process.stdout.write(ok ? "\nAll checks passed.\n" : `\n${results.filter((r) => !r.ok).length} of ${results.length} checks failed.\n`);
      process.exitCode = ok ? 0 : 1;
    });
}
