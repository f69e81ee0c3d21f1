/** What a short command printed and how it ended (a probe: `version`, the doctor's `init`). */
export interface ProbeResult {
  /** Exit code, or undefined when it never started or was ended. */
  exitCode: number | undefined;
  stdout: string;
  stderr: string;
  /** True when it was ended for running past its time limit. */
  timedOut: boolean;
  /** Why it did not start (binary missing, not executable…). */
  spawnError?: Error;
}

/**
 * Runs short commands outside any task's operation, as the driver runs every command: its
 * environment, a process group of their own, known to the reaper and the group file
 * (`CommandRunner` is the one implementation).
 */
export interface TerraformProbe {
  /** The environment every command gets (the daemon's, the driver's base, the backend's; no task's). */
  env(): Record<string, string>;
  /** Runs `binary args` in `cwd` (default: this process's folder), ended after `timeoutMs`. */
  probe(binary: string, args: readonly string[], opts: { cwd?: string; timeoutMs: number }): Promise<ProbeResult>;
}
