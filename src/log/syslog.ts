import { spawn } from "node:child_process";
import { statSync } from "node:fs";
import { CtsError } from "../errors/cts-error.ts";

/**
 * Log lines to the local syslog daemon, as CTS's `syslog {}` does (hashicorp/go-syslog): each line,
 * as written to stderr, becomes one message `<PRI>Mmm dd hh:mm:ss <name>[<pid>]: <line>` on the
 * local socket, every line at priority NOTICE of the configured facility.
 *
 * Node cannot send on a Unix datagram socket (its dgram module speaks UDP only), and /dev/log is
 * one. util-linux's `logger`, present on every Linux system, can: one `logger` process per cts
 * reads the lines from a pipe and sends each as a datagram, with the same header go-syslog writes.
 * It ends when cts closes the pipe, or when cts exits.
 */
export interface SyslogOptions {
  /** Facility name: KERN, USER, MAIL, DAEMON, AUTH, SYSLOG, LPR, NEWS, UUCP, CRON, AUTHPRIV, FTP, LOCAL0-7 (default LOCAL0). */
  facility?: string;
  /** The program name in each message (default consul-terraform-sync). */
  name?: string;
  /** The syslog socket (default: the first of /dev/log, /var/run/syslog, /var/run/log, as go-syslog looks). */
  socket?: string;
}

/** go-syslog's facility names and codes. */
export const SYSLOG_FACILITIES: Readonly<Record<string, number>> = {
  KERN: 0, USER: 1, MAIL: 2, DAEMON: 3, AUTH: 4, SYSLOG: 5, LPR: 6, NEWS: 7, UUCP: 8, CRON: 9, AUTHPRIV: 10, FTP: 11,
  LOCAL0: 16, LOCAL1: 17, LOCAL2: 18, LOCAL3: 19, LOCAL4: 20, LOCAL5: 21, LOCAL6: 22, LOCAL7: 23,
};
/** The socket paths go-syslog tries, in order. */
export const SYSLOG_SOCKETS = ["/dev/log", "/var/run/syslog", "/var/run/log"];
/** LOG_NOTICE: CTS writes every line at this severity. */
const NOTICE = 5;

/** The priority (facility × 8 + NOTICE) of a facility name (any case), or undefined when unknown. */
export function syslogPriority(facility = "LOCAL0"): number | undefined {
  const code = SYSLOG_FACILITIES[facility.toUpperCase()];
  return code === undefined ? undefined : code * 8 + NOTICE;
}

const isSocket = (path: string) => {
  try {
    return statSync(path).isSocket();
  } catch {
    return false;
  }
};

/** A running syslog writer. */
export interface SyslogWriter {
  /** Sends one log line (already redacted) as one message. */
  write(line: string): void;
  /** Ends the writer: `logger` sends what it has and exits. Resolves when it has. */
  close(): Promise<void>;
}

/**
 * Opens the syslog writer. Throws SYSLOG_UNAVAILABLE when the socket is not there (CTS does not
 * start then either); a later failure (the daemon gone) is reported once through `onError`.
 */
export function openSyslog(opts: SyslogOptions, onError: (message: string) => void): SyslogWriter {
  const facility = opts.facility ?? "LOCAL0";
  const priority = syslogPriority(facility);
  if (priority === undefined) throw new CtsError("SYSLOG_UNAVAILABLE", "usage", `syslog facility '${facility}' is not known. Use one of ${Object.keys(SYSLOG_FACILITIES).join(", ")}.`);
  const socket = opts.socket ?? SYSLOG_SOCKETS.find(isSocket);
  if (!socket || !isSocket(socket))
    throw new CtsError("SYSLOG_UNAVAILABLE", "usage", `syslog is on but ${socket ? `'${socket}' is not a socket` : `no syslog socket was found (${SYSLOG_SOCKETS.join(", ")})`}: is a syslog daemon running?`);
  const child = spawn("logger", ["--socket", socket, "--socket-errors=on", "--prio-prefix", "--tag", opts.name ?? "consul-terraform-sync", `--id=${process.pid}`, "--size", "65000"], {
    stdio: ["pipe", "ignore", "pipe"],
  });
  let failed = false;
  let closing = false;
  let stderr = "";
  const fail = (why: string) => {
    if (failed) return;
    failed = true;
    onError(`syslog: ${why}; log lines go to stderr only from now on`);
  };
  child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr = (stderr + d).slice(-2000)));
  const exited = new Promise<void>((resolve) => {
    child.on("error", (err: NodeJS.ErrnoException) => {
      fail(err.code === "ENOENT" ? "the 'logger' command (util-linux) is not installed" : `cannot start 'logger': ${err.message}`);
      resolve();
    });
    child.on("exit", (code) => {
      if (code !== 0 && !closing) fail(`'logger' stopped (exit ${code}): ${stderr.trim() || "no message"}`);
      resolve();
    });
  });
  child.stdin.on("error", () => {}); // a write after logger ended; reported through "exit"
  // The pipe and the process must not keep cts alive; when cts exits, logger reads EOF and ends.
  child.unref();
  (child.stdin as unknown as { unref?: () => void }).unref?.();
  (child.stderr as unknown as { unref?: () => void }).unref?.();
  return {
    write(line: string) {
      if (failed || closing) return;
      // One line is one message: logger splits on newlines, so a line's own newlines become spaces.
      child.stdin.write(`<${priority}>${line.replace(/\r?\n/g, " ")}\n`);
    },
    async close() {
      if (closing) return exited;
      closing = true;
      // Wait for logger to send the last lines: held again until it exits.
      if (child.exitCode === null && child.signalCode === null) child.ref();
      child.stdin.end();
      return exited;
    },
  };
}
