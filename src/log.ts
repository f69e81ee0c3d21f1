import { knownSecrets } from "./secrets/redactor.ts";

/** Log levels, quietest last. */
export type LogLevel = "trace" | "debug" | "info" | "warn" | "error";
const ORDER: Record<LogLevel, number> = { trace: 0, debug: 1, info: 2, warn: 3, error: 4 };

/** A small structured logger: `2026-01-01T00:00:00.000Z [INFO] (watch) msg key=value`. */
export interface Logger {
  trace(msg: string, fields?: Record<string, unknown>): void;
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
  /** A logger whose lines carry a component name. */
  child(component: string): Logger;
}

/** Never log this value (tokens, keys): it joins the process's known secrets (src/secrets/redactor.ts). */
export function redactSecret(value: string | undefined): void {
  knownSecrets.add(value);
}

/** Replaces every known secret in `text` with `[redacted]`. */
export function redact(text: string): string {
  return knownSecrets.redact(text);
}

/** Options for createLogger. */
export interface LoggerOptions {
  level?: LogLevel;
  /** One JSON object per line instead of text. */
  json?: boolean;
  /** Where lines go (default stderr). */
  write?: (line: string) => void;
}

/** Creates a logger (level from CTS_LOG_LEVEL when not given). */
export function createLogger(opts: LoggerOptions = {}, component?: string): Logger {
  const level = opts.level ?? ((process.env.CTS_LOG_LEVEL as LogLevel | undefined) ?? "info");
  const write = opts.write ?? ((line: string) => process.stderr.write(line + "\n"));
  const emit = (lvl: LogLevel, msg: string, fields?: Record<string, unknown>) => {
    if (ORDER[lvl] < (ORDER[level] ?? 2)) return;
    const time = new Date().toISOString();
    if (opts.json) {
      write(redact(JSON.stringify({ "@timestamp": time, "@level": lvl, "@module": component, "@message": msg, ...fields })));
      return;
    }
    const kv = fields
      ? Object.entries(fields)
          .filter(([, v]) => v !== undefined)
          .map(([k, v]) => `${k}=${typeof v === "string" && !/\s/.test(v) ? v : JSON.stringify(v)}`)
          .join(" ")
      : "";
    write(redact(`${time} [${lvl.toUpperCase()}] ${component ? `(${component}) ` : ""}${msg}${kv ? " " + kv : ""}`));
  };
  return {
    trace: (m, f) => emit("trace", m, f),
    debug: (m, f) => emit("debug", m, f),
    info: (m, f) => emit("info", m, f),
    warn: (m, f) => emit("warn", m, f),
    error: (m, f) => emit("error", m, f),
    child: (c) => createLogger(opts, component ? `${component}.${c}` : c),
  };
}
