import { knownSecrets } from "../secrets/redactor.ts";
import { pino, type DestinationStream, type Logger as PinoLogger } from "pino";

/** Log levels, quietest last. */
export type LogLevel = "trace" | "debug" | "info" | "warn" | "error";
const LEVELS = new Set<string>(["trace", "debug", "info", "warn", "error"]);

/**
 * A small structured logger (pino underneath). Text lines read as CTS's:
 * `2026-01-01T00:00:00.000Z [INFO] ctrl: message task=web k=v`; with `json`, one object per line
 * with time, level, component, task, message and the fields.
 */
export interface Logger {
  trace(msg: string, fields?: Record<string, unknown>): void;
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
  /** A logger whose lines carry a component name (nested as `parent.child`) and, optionally, a task. */
  child(component: string, bindings?: { task?: string }): Logger;
}

/** Never log this value (tokens, keys): it joins the process's known secrets (src/secrets/redactor.ts). */
export function redactSecret(value: string | undefined): void {
  knownSecrets.add(value);
}

/** Replaces every known secret in `text` with `[redacted]`. */
export function redact(text: string): string {
  return knownSecrets.redact(text);
}

/** Field names whose values are secrets whatever they hold (pino censors them before writing). */
const SECRET_FIELDS = ["token", "password", "secret", "secretId", "secret_id", "authorization", "*.token", "*.password", "*.secret", "*.authorization"];

/** Options for createLogger. */
export interface LoggerOptions {
  level?: LogLevel;
  /** One JSON object per line instead of text. */
  json?: boolean;
  /** Where lines go (default stderr). */
  write?: (line: string) => void;
}

const RESERVED = new Set(["time", "level", "component", "task", "message"]);

/** One pino JSON record as a CTS-like text line. */
function textLine(rec: Record<string, unknown>): string {
  const fields = Object.entries(rec)
    .filter(([k, v]) => !RESERVED.has(k) && v !== undefined)
    .map(([k, v]) => `${k}=${typeof v === "string" && v !== "" && !/\s/.test(v) ? v : JSON.stringify(v)}`);
  if (typeof rec.task === "string") fields.unshift(`task=${rec.task}`);
  const message = String(rec.message ?? "");
  // Many messages already start as CTS writes them ("ha: acquired leadership lock"): the component
  // is not repeated then, so the line reads exactly as CTS's.
  const component = rec.component ? String(rec.component) : "";
  const prefix = component && !message.startsWith(`${component}: `) && !message.startsWith(`${component.split(".").pop()}: `) ? `${component}: ` : "";
  const head = `${String(rec.time)} [${String(rec.level).toUpperCase()}] ${prefix}${message}`;
  return fields.length ? `${head} ${fields.join(" ")}` : head;
}

/** A JSON line always names its component: lines of the root logger say "cts". */
function withComponent(json: string): string {
  const rec = JSON.parse(json) as Record<string, unknown>;
  return rec.component ? json : JSON.stringify({ level: rec.level, time: rec.time, component: "cts", ...rec });
}

/** Creates a logger (level from CTS_LOG_LEVEL when not given). */
export function createLogger(opts: LoggerOptions = {}, component?: string): Logger {
  const env = process.env.CTS_LOG_LEVEL?.toLowerCase();
  const level = opts.level ?? (env && LEVELS.has(env) ? (env as LogLevel) : "info");
  const write = opts.write ?? ((line: string) => process.stderr.write(line + "\n"));
  // pino hands every record to this stream synchronously, already serialised and censored.
  const destination: DestinationStream = {
    write(record: string) {
      const json = record.trimEnd();
      write(redact(opts.json ? withComponent(json) : textLine(JSON.parse(json) as Record<string, unknown>)));
    },
  };
  const root = pino(
    {
      level,
      base: undefined,
      messageKey: "message",
      timestamp: () => `,"time":"${new Date().toISOString()}"`,
      formatters: { level: (label) => ({ level: label }) },
      redact: { paths: SECRET_FIELDS, censor: "[redacted]" },
    },
    destination,
  );
  return wrap(root, component ? { component } : {});
}

// Children are made from the root with their full bindings, so a nested component replaces the
// parent's instead of appearing twice in one JSON object.
function wrap(root: PinoLogger, bindings: { component?: string; task?: string }): Logger {
  const log = Object.keys(bindings).length ? root.child(bindings) : root;
  const emit = (lvl: LogLevel) => (msg: string, fields?: Record<string, unknown>) => (fields ? log[lvl](fields, msg) : log[lvl](msg));
  return {
    trace: emit("trace"),
    debug: emit("debug"),
    info: emit("info"),
    warn: emit("warn"),
    error: emit("error"),
    child: (c, more) =>
      wrap(root, { component: bindings.component ? `${bindings.component}.${c}` : c, ...(bindings.task ? { task: bindings.task } : {}), ...(more?.task ? { task: more.task } : {}) }),
  };
}
