import { resolve } from "node:path";
import type { CommandTimeouts, TerraformDriverOptions } from "./types.ts";

/** Default time limit of one operation (init + workspace + command). */
export const DEFAULT_TIMEOUT_MS = 30 * 60_000;
/** Default time between SIGINT and SIGKILL when a command is stopped. */
export const DEFAULT_KILL_GRACE_MS = 10_000;
/** Long enough for a crashed run's Consul lock to go: session TTL 15 s (invalidated within 2×TTL) + lock-delay. */
export const DEFAULT_LOCK_TIMEOUT_MS = 90_000;
/** Limits of the short commands; a hang there is a bug or a dead backend, never honest work. */
export const DEFAULT_COMMAND_TIMEOUTS: Required<CommandTimeouts> = {
  version: 30_000,
  workspace: 60_000,
  validate: 60_000,
  init: 5 * 60_000,
  show: 5 * 60_000,
  silence: 5 * 60_000,
};

/** The driver's limits and places, defaults filled in once when the driver is made. */
export interface DriverSettings {
  /** Absolute root: each task works in `<root>/<task>`. */
  root: string;
  binary: string;
  killGraceMs: number;
  lockTimeoutMs: number;
  timeouts: Required<CommandTimeouts>;
  /** Limit of one operation when the caller gives none. */
  defaultTimeoutMs: number;
}

/** The settings `options` describe. */
export function driverSettings(options: TerraformDriverOptions): DriverSettings {
  return {
    root: resolve(options.workingDir),
    binary: options.binary,
    killGraceMs: options.killGraceMs ?? DEFAULT_KILL_GRACE_MS,
    lockTimeoutMs: options.lockTimeoutMs ?? DEFAULT_LOCK_TIMEOUT_MS,
    timeouts: { ...DEFAULT_COMMAND_TIMEOUTS, ...definedOnly(options.commandTimeouts) },
    defaultTimeoutMs: options.defaultTimeoutMs ?? DEFAULT_TIMEOUT_MS,
  };
}

/** The `-lock-timeout` flag of commands that take the state lock (whole seconds, as Terraform wants). */
export function lockTimeoutArg(lockTimeoutMs: number): string {
  return `-lock-timeout=${Math.max(0, Math.ceil(lockTimeoutMs / 1000))}s`;
}

/** The keys of `o` whose value is set (so `{ init: undefined }` keeps the default). */
export function definedOnly<T extends object>(o: T | undefined): Partial<T> {
  return Object.fromEntries(Object.entries(o ?? {}).filter(([, v]) => v !== undefined)) as Partial<T>;
}
