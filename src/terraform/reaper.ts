import { spawn, type ChildProcess } from "node:child_process";

/**
 * The reaper's script. It reads "+<pgid>" / "-<pgid>" lines from its stdin; when stdin ends (the
 * daemon exited, or died from SIGKILL, which no in-process hook survives) it sends SIGINT to every
 * group still registered, so Terraform stops gracefully, saves state and releases its lock, waits
 * up to the grace period for the groups to go, then SIGKILLs what is left and exits. It ignores
 * INT/TERM/HUP so a Ctrl-C to the terminal's process group cannot take it down before the daemon.
 */
// dash's kill knows no "--" and no "-s NAME -pgid": numeric signals before a negative pid only.
// Removing a group uses shell built-ins only: a `sed` there forked and exec'd a process for every
// Terraform command that ended.
const SCRIPT = `
trap '' INT TERM HUP
grace=$1
groups=" "
while IFS= read -r line; do
  case "$line" in
    +*) groups="$groups\${line#+} " ;;
    -*) kept=" "; for g in $groups; do [ "$g" = "\${line#-}" ] || kept="$kept$g "; done; groups=$kept ;;
  esac
done
[ "$groups" = " " ] && exit 0
for g in $groups; do kill -2 "-$g" 2>/dev/null; done
waited=0
while [ "$waited" -lt "$grace" ]; do
  alive=0
  for g in $groups; do kill -0 "-$g" 2>/dev/null && alive=1; done
  [ "$alive" = 0 ] && exit 0
  sleep 0.2
  waited=$((waited + 200))
done
for g in $groups; do kill -9 "-$g" 2>/dev/null; done
exit 0
`;

/** A companion process that kills the driver's Terraform process groups once the daemon is gone. */
export interface Reaper {
  /** Registers a process group cts started. */
  add(pgid: number): void;
  /** Forgets a process group whose command ended. */
  remove(pgid: number): void;
  /** The reaper's own pid (for tests), undefined when it could not start. */
  readonly pid: number | undefined;
}

/**
 * Starts the reaper: one `sh` per driver, in its own process group, connected by a pipe that the
 * kernel closes when the daemon dies however it dies. Neither the child nor the pipe keeps the
 * daemon's event loop alive. When `sh` cannot start, the in-process exit hook still covers the
 * ordinary exits and the start-up recovery covers crashes.
 */
export function startReaper(graceMs: number, warn?: (line: string) => void): Reaper {
  let child: ChildProcess | undefined;
  try {
    child = spawn("/bin/sh", ["-c", SCRIPT, "cts-reaper", String(Math.max(0, Math.round(graceMs)))], {
      stdio: ["pipe", "ignore", "ignore"],
      detached: true,
    });
  } catch (err) {
    warn?.(`could not start the process reaper (${String(err)}); Terraform may outlive a crashed daemon`);
  }
  let broken = child === undefined;
  child?.on("error", (err) => {
    broken = true;
    warn?.(`the process reaper failed (${err.message}); Terraform may outlive a crashed daemon`);
  });
  child?.on("exit", () => {
    broken = true;
  });
  child?.stdin?.on("error", () => {
    broken = true;
  });
  child?.unref();
  (child?.stdin as unknown as { unref?: () => void } | undefined)?.unref?.();
  const send = (line: string) => {
    if (!broken) child?.stdin?.write(`${line}\n`);
  };
  return {
    add: (pgid) => send(`+${pgid}`),
    remove: (pgid) => send(`-${pgid}`),
    get pid() {
      return child?.pid;
    },
  };
}
