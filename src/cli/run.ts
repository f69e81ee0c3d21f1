import type { Command } from "commander";
import { loadConfig, type LoadedConfig } from "../config/load.ts";
import type { CtsConfig, LogFormat } from "../config/types.ts";
import { CtsError, doctorHint } from "../errors/cts-error.ts";
import { createLogger, type LogLevel } from "../log/logger.ts";
import { openSyslog, type SyslogWriter } from "../log/syslog.ts";
import { loadDaemonConfig, type DaemonConfig } from "../synth/daemon-config.ts";
import type { Synthesizer } from "../synth/synthesizer.ts";
import type { RunOutcome } from "../runtime/interfaces.ts";
import { printJson, say, table } from "./output.ts";
import { userCodeFields, userStackText } from "../errors/user-frames.ts";

/** Flags shared by the run commands. */
export interface RunFlags {
  config?: string;
  buffer?: boolean;
  logLevel?: LogLevel;
  logJson?: boolean;
  logFormat?: string;
  json?: boolean;
}

/** The log format: `--log-format`, then `--log-json`, then the config's logFormat/log_format, then text. */
export function logFormatOf(flags: { logFormat?: string; logJson?: boolean }, config?: Pick<CtsConfig, "logFormat" | "log_format">): LogFormat {
  const flag = flags.logFormat?.toLowerCase();
  if (flag !== undefined && flag !== "text" && flag !== "json")
    throw new CtsError("LOG_FORMAT_INVALID", "usage", `--log-format '${flags.logFormat!.slice(0, 40)}' is not a log format. Use --log-format text or --log-format json.`);
  return (flag as LogFormat | undefined) ?? (flags.logJson ? "json" : undefined) ?? config?.logFormat ?? config?.log_format ?? "text";
}

function logger(flags: RunFlags, loaded?: LoadedConfig) {
  const level = flags.logLevel ?? loaded?.logLevel;
  const syslog = syslogFor(loaded?.config);
  const toStderr = (line: string) => process.stderr.write(line + "\n");
  const log = createLogger({
    ...(level ? { level } : {}),
    ...(logFormatOf(flags, loaded?.config) === "json" ? { json: true } : {}),
    ...(syslog ? { write: (line: string) => (toStderr(line), syslog.write(line)) } : {}),
  });
  for (const w of loaded?.warnings ?? []) log.warn(w);
  return log;
}

function common(cmd: Command): Command {
  return cmd
    .option("-c, --config <file>", "config file (default ./cts.config.ts)")
    .option("--log-level <level>", "trace, debug, info, warn or error (default info, or CTS_LOG_LEVEL)")
    .option("--log-format <format>", "text (CTS-like lines, default) or json (one JSON object per line); default the config's logFormat")
    .option("--log-json", "same as --log-format json");
}

/** `cts watch`, `cts once`, `cts inspect`. */
export function registerRun(program: Command): void {
  common(program.command("watch"))
    .description("Run every task once, then watch Consul and run tasks when their data changes")
    .option("--no-buffer", "turn every buffer period off")
    .option("--reset-storage", "high availability: clear the task state stored in Consul when this instance becomes leader")
    .option("--api-address <address>", "address the HTTP API listens on (default api.address, then 127.0.0.1)")
    .option("--api-port <port>", "port of the HTTP API; 0 picks a free one (default api.port, then 8558)")
    .action(async (flags: RunFlags & Record<string, unknown>) => {
      logFormatOf(flags); // a bad --log-format fails before the config loads
      const { loaded, synthesizer } = await daemonConfig(flags.config);
      await runWatch(loaded, flags, synthesizer);
    });

  common(program.command("once"))
    .description("Run every enabled task once and exit (non-zero if any failed)")
    .option("--json", "print results as JSON")
    .action(async (flags: RunFlags) => runOnce(await loadConfig(flags.config), flags));

  common(program.command("inspect"))
    .description("Plan tasks without applying; exit 0 = no changes, 2 = changes present, 1 = error")
    .argument("[task...]", "tasks to plan (default: all enabled)")
    .option("--json", "print results as JSON")
    .action(async (names: string[], flags: RunFlags) => runInspect(await loadConfig(flags.config), names, flags));
}

/**
 * CTS's `syslog {}`: log lines go to the local syslog socket too. Opened once per process; the
 * last lines are sent before the process exits.
 */
function syslogFor(config?: CtsConfig): SyslogWriter | undefined {
  const settings = config?.syslog;
  if (!settings || settings.enabled === false) return undefined;
  const { enabled: _on, ...opts } = settings;
  const writer = openSyslog(opts, (message) => process.stderr.write(`${new Date().toISOString()} [WARN] ${message}\n`));
  process.once("beforeExit", () => void writer.close());
  return writer;
}

/** The daemon's modules (the runtime, the driver, the API), loaded on first need. */
const runtime = () => import("../daemon/compose.ts");

/**
 * The daemon's config (read in the synthesis worker, see loadDaemonConfig), with the daemon's own
 * modules loaded on this thread meanwhile: on two cores the start-up's two halves overlap.
 */
export async function daemonConfig(path?: string | string[]): Promise<DaemonConfig> {
  const config = loadDaemonConfig(path);
  const modules = runtime();
  // A config that fails to load is the error to report; the modules' promise must not go unhandled.
  modules.catch(() => undefined);
  const loaded = await config;
  try {
    await modules;
  } catch (err) {
    await loaded.synthesizer.close();
    throw err;
  }
  return loaded;
}

/** `cts watch` (and `cts start`): the daemon, until SIGINT or SIGTERM. */
export async function runWatch(loaded: LoadedConfig, flags: RunFlags & Record<string, unknown>, synthesizer?: Synthesizer): Promise<void> {
  const log = logger(flags, loaded);
  // The handlers come first: a signal while the daemon starts (its first runs may already have
  // started Terraform) is held, and the daemon stops as soon as it has started, instead of the
  // process ending with its children left behind.
  let received: string | undefined;
  let onSignal = (signal: string) => void (received ??= signal);
  const onInt = () => onSignal("SIGINT");
  const onTerm = () => onSignal("SIGTERM");
  process.on("SIGINT", onInt);
  process.on("SIGTERM", onTerm);
  let daemon: Awaited<ReturnType<Awaited<ReturnType<typeof runtime>>["startDaemon"]>>;
  try {
    const { startDaemon } = await runtime();
    daemon = await startDaemon(loaded, {
      log,
      ...(synthesizer ? { synthesizer } : {}),
      bufferOff: flags.buffer === false,
      resetStorage: flags.resetStorage === true,
      ...(typeof flags.apiAddress === "string" ? { apiAddress: flags.apiAddress } : {}),
      ...(typeof flags.apiPort === "string" ? { apiPort: flags.apiPort } : {}),
    });
  } catch (err) {
    process.off("SIGINT", onInt);
    process.off("SIGTERM", onTerm);
    throw err;
  }
  await new Promise<void>((resolve) => {
    let stopping = false;
    const stop = async (signal: string) => {
      if (stopping) return;
      stopping = true;
      log.info(`received ${signal}, stopping`);
      process.off("SIGINT", onInt);
      process.off("SIGTERM", onTerm);
      await daemon.stop();
      log.info("stopped");
      resolve();
    };
    onSignal = (signal) => void stop(signal);
    if (received) void stop(received);
  });
}

/** `cts once` (and `cts start -once`): every enabled task once, exit 1 if any failed. */
export async function runOnce(loaded: LoadedConfig, flags: RunFlags): Promise<void> {
  const { createRuntime } = await runtime();
  const rt = createRuntime(loaded, { mode: "once", log: logger(flags, loaded) });
  if (loaded.config.highAvailability)
    rt.log.warn("cts once runs every task itself, whatever the high-availability leader does; only the Terraform state lock keeps it from applying at the same time as the leader");
  try {
    const results = await rt.controller.once();
    report(results, flags.json);
    if (results.some((r) => !r.ok)) process.exitCode = 1;
  } finally {
    await rt.close();
  }
}

/** `cts inspect` (and `cts start -inspect`): plan, print, exit 0 / 2 (changes) / 1 (error). */
export async function runInspect(loaded: LoadedConfig, names: string[], flags: RunFlags): Promise<void> {
  const { createRuntime } = await runtime();
  const rt = createRuntime(loaded, { mode: "inspect", log: logger(flags, loaded) });
  try {
    const results = await rt.controller.inspect(names);
    if (flags.json) report(results, true);
    else
      for (const r of results) {
        say(`==> Task '${r.task}': ${r.ok ? (r.result?.changesPresent ? "changes present" : "no changes") : "error"}\n`);
        if (r.result?.output) say(r.result.output.trimEnd() + "\n");
        if (r.result?.url) say(`Inspection results can also be viewed at: ${r.result.url}\n`);
        if (r.error) say(`error: ${r.error.message}${doctorHint(r.error)}${userStackText(r.error)}\n`);
        process.stdout.write("\n");
      }
    process.exitCode = results.some((r) => !r.ok) ? 1 : results.some((r) => r.result?.changesPresent) ? 2 : 0;
  } finally {
    await rt.close();
  }
}

function report(results: RunOutcome[], json?: boolean): void {
  if (json) {
    printJson({
      tasks: results.map((r) => ({
        task: r.task,
        ok: r.ok,
        outcome: r.outcome,
        changes_present: r.result?.changesPresent ?? false,
        summary: r.result?.summary,
        error: r.error ? { code: r.error.code, message: r.error.message, ...userCodeFields(r.error) } : null,
      })),
    });
    return;
  }
  process.stdout.write(
    table([
      ["TASK", "RESULT", "ADD", "CHANGE", "DESTROY"],
      ...results.map((r) => [r.task, r.outcome, String(r.result?.summary.add ?? "-"), String(r.result?.summary.change ?? "-"), String(r.result?.summary.destroy ?? "-")]),
    ]),
  );
  for (const r of results) if (r.error) say(`error: ${r.error.message}${doctorHint(r.error)}${userStackText(r.error)}\n`, process.stderr);
}
