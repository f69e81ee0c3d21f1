import type { Command } from "commander";
import { loadConfig } from "../config/load.ts";
import { CtsError } from "../errors/cts-error.ts";
import { formatCheck } from "../doctor/check.ts";
import { runDoctor } from "../doctor/doctor.ts";
import { printJson } from "./output.ts";

/** `cts doctor`: checks everything a run needs, one line per check with its fix; exit 0 only when all pass. */
export function registerDoctor(program: Command): void {
  program
    .command("doctor")
    .description("Check Consul, the token's permissions per task, Terraform (or Terraform Cloud: token, organization, TLS), providers, the working dir and the API port")
    .option("-c, --config <file>", "config file (default ./cts.config.ts)")
    .option("--json", "print the results as JSON")
    .option("--api-address <address>", "check this API address instead of api.address (as cts watch --api-address)")
    .option("--api-port <port>", "check this API port instead of api.port (as cts watch --api-port)")
    .action(async (flags: { config?: string; json?: boolean; apiAddress?: string; apiPort?: string }) => {
      const loaded = await loadConfig(flags.config);
      const port = flags.apiPort === undefined ? undefined : Number(flags.apiPort);
      if (port !== undefined && (!Number.isInteger(port) || port < 0 || port > 65535)) throw new CtsError("USAGE", "usage", `--api-port '${flags.apiPort}' is not a port (0-65535).`);
      const api = { ...(flags.apiAddress ? { address: flags.apiAddress } : {}), ...(port !== undefined ? { port } : {}) };
      const results = await runDoctor(loaded, flags.json ? undefined : (r) => process.stdout.write(`${formatCheck(r)}\n`), api);
      const ok = results.every((r) => r.ok);
      if (flags.json) printJson({ ok, config: loaded.file, checks: results });
      else process.stdout.write(ok ? "\nAll checks passed.\n" : `\n${results.filter((r) => !r.ok).length} of ${results.length} checks failed.\n`);
      process.exitCode = ok ? 0 : 1;
    });
}
