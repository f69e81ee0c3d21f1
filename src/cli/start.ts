import type { Command } from "commander";
import { loadConfig } from "../config/load.ts";
import { CtsError } from "../errors/cts-error.ts";
import { daemonConfig, runInspect, runOnce, runWatch, type RunFlags } from "./run.ts";

const collect = (v: string, prev: string[] = []) => [...prev, v];

/** `cts start`: CTS's command line (`-config-file`/`-config-dir`, repeatable; `-once`, `-inspect`, `-inspect-task`). */
export function registerStart(program: Command): void {
  program
    .command("start")
    .description("CTS's command line: run the daemon from CTS config files (-config-file, -config-dir; HCL or JSON)")
    .option("--config-file <file>", "a CTS config file (.hcl or .json); repeatable, merged in order", collect)
    .option("--config-dir <dir>", "a directory of CTS config files (.hcl and .json, not recursive); repeatable", collect)
    .option("--once", "run every task once and exit")
    .option("--inspect", "plan every task, print the plans and exit; nothing is applied")
    .option("--inspect-task <name>", "plan this task (repeatable), print and exit", collect)
    .option("--reset-storage", "high availability: overwrite the task state stored in Consul when this instance becomes leader")
    .option("--no-buffer", "turn every buffer period off")
    .option("--api-address <address>", "address the HTTP API listens on")
    .option("--api-port <port>", "port of the HTTP API; 0 picks a free one")
    .option("--log-level <level>", "trace, debug, info, warn or error (default: the config's log_level, then info)")
    .option("--log-json", "one JSON object per log line")
    .action(async (flags: RunFlags & Record<string, unknown> & { configFile?: string[]; configDir?: string[]; inspectTask?: string[] }) => {
      const paths = [...(flags.configFile ?? []), ...(flags.configDir ?? [])];
      if (paths.length === 0) throw new CtsError("CONFIG_NOT_FOUND", "usage", "cts start needs -config-file <file.hcl> or -config-dir <dir> (each may be repeated).");
      // CTS reads each -config-file and -config-dir in the order given; commander keeps each flag's own order.
      const order = process.argv.filter((a, i, all) => /^--config-(file|dir)$/.test(all[i - 1] ?? "") || /^--config-(file|dir)=/.test(a)).map((a) => a.replace(/^--config-(file|dir)=/, ""));
      const files = order.length === paths.length ? order : paths;
      if (flags.inspect || flags.inspectTask?.length) return runInspect(await loadConfig(files), flags.inspectTask ?? [], flags);
      if (flags.once) return runOnce(await loadConfig(files), flags);
      const { loaded, synthesizer } = await daemonConfig(files);
      return runWatch(loaded, flags, synthesizer);
    });
}
