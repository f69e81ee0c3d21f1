import { CommanderError } from "commander";
import { CtsError } from "../../errors/cts-error.ts";

/**
 * CTS's CLI habits for `cts task …`. CTS parses flags with Go's `flag` package: one or two dashes
 * (`-http-addr x`, `--http-addr=x`), booleans as `-auto-approve` or `-ssl-verify=false`. commander
 * reads only `--long` (and would take `-http-addr` for `-h …`), so these spellings are rewritten
 * before parsing. Exit codes follow CTS's `command/cli.go`.
 */

/** CTS's exit codes (`10 + iota`). */
export const CTS_EXIT = { ok: 0, error: 11, interrupt: 12, requiredFlags: 13, parseFlags: 14, config: 15, driver: 16 } as const;

/** Flags of the task commands that take a value. */
const VALUE_FLAGS = new Set(["http-addr", "port", "ca-cert", "ca-path", "client-cert", "client-key", "task-file", "token"]);
/** Boolean flags (Go accepts `-x`, `-x=true`, `-x=false`, `-x=0`…). */
const BOOL_FLAGS = new Set(["auto-approve", "ssl-verify", "json", "destroy", "help"]);
const GO_TRUE = new Set(["1", "t", "T", "true", "TRUE", "True"]);
const GO_FALSE = new Set(["0", "f", "F", "false", "FALSE", "False"]);

/**
 * Rewrites CTS's spellings in the arguments of `cts task …` to the ones commander reads; other
 * commands' arguments are returned unchanged. A boolean set to false becomes `--no-<flag>` for
 * flags whose default is true (ssl-verify) and disappears otherwise (false is their default).
 */
export function ctsTaskArgv(argv: readonly string[]): string[] {
  const out = argv.slice(0, 2);
  const args = argv.slice(2);
  if (args[0] !== "task") return [...argv];
  let flagsDone = false;
  for (const arg of args) {
    if (flagsDone || arg === "--" || !arg.startsWith("-") || arg === "-") {
      flagsDone ||= arg === "--";
      out.push(arg);
      continue;
    }
    const m = /^--?([a-z][a-z-]*)(?:=(.*))?$/s.exec(arg);
    const name = m?.[1];
    if (!m || !name || (!VALUE_FLAGS.has(name) && !BOOL_FLAGS.has(name))) {
      out.push(arg); // not ours: commander reports it (exit 14)
      continue;
    }
    const value = m[2];
    if (VALUE_FLAGS.has(name)) out.push(value === undefined ? `--${name}` : `--${name}=${value}`);
    else if (value === undefined || GO_TRUE.has(value)) out.push(`--${name}`);
    else if (GO_FALSE.has(value)) {
      if (name === "ssl-verify") out.push("--no-ssl-verify");
    } else out.push(`--${name}=${value}`); // commander refuses a value on a boolean flag (exit 14)
  }
  return out;
}

/** commander's error codes that mean a missing argument or required flag (CTS: 13). */
const REQUIRED = new Set(["commander.missingArgument", "commander.missingMandatoryOptionValue", "commander.excessArguments"]);

/**
 * The exit code CTS gives for the same failure of a task command: 0 for help, 13 for a missing
 * task name or `-task-file`, 14 for a flag it cannot parse, 11 for every other error (CTS's client
 * and API errors are all ExitCodeError).
 */
export function ctsTaskExitCode(err: unknown): number {
  if (err instanceof CommanderError) {
    if (err.exitCode === 0) return CTS_EXIT.ok;
    return REQUIRED.has(err.code) ? CTS_EXIT.requiredFlags : CTS_EXIT.parseFlags;
  }
  if (err instanceof CtsError) return CTS_EXIT.error;
  return CTS_EXIT.error;
}

/**
 * CTS's exit codes for `cts start` (its `start`/daemon command): a flag it cannot parse 14, a config
 * it cannot load 15, Terraform that cannot run 16, any other failure (a failed `-once` task too) 11.
 */
export function ctsStartExitCode(err: unknown): number {
  if (err instanceof CommanderError) return err.exitCode === 0 ? CTS_EXIT.ok : CTS_EXIT.parseFlags;
  if (err instanceof CtsError) {
    if (/^(CONFIG_|TASK_FILE_|TASK_INVALID|TASK_NAME_INVALID|DURATION_INVALID|BUFFER_PERIOD_INVALID|REGEXP_INVALID|SERVICES_QUERY_INVALID|KV_QUERY_INVALID|CONSUL_ADDRESS_INVALID|CONSUL_TLS_FILE|CONSUL_TOKEN_FILE)/.test(err.code)) return CTS_EXIT.config;
    if (err.code.startsWith("TERRAFORM_")) return CTS_EXIT.driver;
  }
  return CTS_EXIT.error;
}
