import { spawn, type ChildProcess } from "node:child_process";
import { join } from "node:path";
import { createInterface } from "node:readline";

/**
 * A syslog daemon's socket for tests: a Unix datagram socket bound at `<dir>/log` by a small
 * python3 process (Node cannot bind one), which prints every datagram it receives as a JSON string
 * line. Stop it in the test's `after`.
 */
export interface SyslogListener {
  /** The socket path (give it as syslog.socket). */
  path: string;
  /** Every datagram received so far, as text. */
  messages: string[];
  /** Waits for a datagram matching `pattern` (event-driven, with a generous limit). */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<string>;
  stop(): Promise<void>;
}

const LISTENER = `
import json, os, socket, sys
path = sys.argv[1]
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(path)
print(json.dumps("ready"), flush=True)
while True:
    print(json.dumps(s.recv(262144).decode("utf-8", "replace")), flush=True)
`;

export async function startSyslogListener(dir: string): Promise<SyslogListener> {
  const path = join(dir, "log");
  const child: ChildProcess = spawn("python3", ["-c", LISTENER, path], { stdio: ["ignore", "pipe", "pipe"] });
  const messages: string[] = [];
  const waiters = new Set<() => void>();
  let stderr = "";
  child.stderr!.on("data", (d) => (stderr += String(d)));
  const exited = new Promise<void>((resolve) => child.on("exit", () => resolve()));
  await new Promise<void>((resolve, reject) => {
    const lines = createInterface({ input: child.stdout! });
    let ready = false;
    lines.on("line", (l) => {
      const text = JSON.parse(l) as string;
      if (!ready && text === "ready") {
        ready = true;
        return resolve();
      }
      messages.push(text);
      for (const w of waiters) w();
    });
    child.on("exit", (code) => !ready && reject(new Error(`the syslog listener did not start (exit ${code}): ${stderr}`)));
  });
  return {
    path,
    messages,
    waitFor(pattern, timeoutMs = 30_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const m = messages.find((x) => pattern.test(x));
          if (m === undefined) return false;
          waiters.delete(check);
          clearTimeout(timer);
          resolve(m);
          return true;
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`no syslog message matched ${pattern} within ${timeoutMs} ms; received:\n${messages.join("\n")}`));
        }, timeoutMs);
        if (!check()) waiters.add(check);
      });
    },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill();
      await exited;
    },
  };
}
