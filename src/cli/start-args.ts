/** CTS's `start` flags, which CTS (Go's flag package) also accepts with one dash. */
export const CTS_START_FLAGS = ["config-file", "config-dir", "once", "inspect", "inspect-task", "reset-storage", "log-level", "log-json", "api-address", "api-port", "no-buffer"];

/** Rewrites `-config-file x` / `-once` to their `--` form for `cts start` (and a bare `cts -config-file …`, CTS's deprecated spelling of start). */
export function normalizeStartArgs(argv: string[]): string[] {
  const first = argv[2];
  const bareFlags = first !== undefined && /^--?config-(file|dir)(=|$)/.test(first);
  if (first !== "start" && !bareFlags) return argv;
  const rest = argv.slice(bareFlags ? 2 : 3).map((a) => {
    const m = /^-([a-z][a-z-]+)(=.*)?$/.exec(a);
    return m && CTS_START_FLAGS.includes(m[1]!) ? `-${a}` : a;
  });
  return [argv[0]!, argv[1]!, "start", ...rest];
}
