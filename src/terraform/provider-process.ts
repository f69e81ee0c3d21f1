import { readFileSync } from "node:fs";
import { createInterface } from "node:readline";
import { forgetLiveGroup, rememberLiveGroup, signalGroup, startInGroup } from "./process.ts";
import type { LaunchSpec, ProviderLauncher, ProviderServer, ReattachConfig } from "./warm-pool.ts";

/** How the real launcher starts provider processes. */
export interface ProviderLaunchOptions {
  /** How long a provider gets to print its reattach line (default 15 s); a provider without `-debug` never does. */
  startTimeoutMs?: number;
  /** Time between SIGTERM and SIGKILL when ending one. */
  killGraceMs: number;
  /** Registers the process group with the reaper and the group file (so even kill -9 of the daemon leaves none). */
  track: (task: string, command: string) => { add(pgid: number): void; remove(pgid: number): void };
  /** The provider's own output, line by line (the task's log at debug level). */
  output?: (task: string, line: string) => void;
}

const REATTACH_LINE = /TF_REATTACH_PROVIDERS='(\{.*\})'/;
// Debug-mode providers log at trace level whatever TF_LOG says; Terraform drops those lines unless
// asked to, and so do we (a run would otherwise push ~100 KB of trace through the log).
const CHATTY = /^\{.*?"@level":"(trace|debug)"/;

/**
 * The environment a warm provider starts with. A provider in debug mode logs every gRPC call of the
 * SDK at trace level (its logger defaults to trace when TF_LOG_SDK is unset, and ignores TF_LOG):
 * ~200 KB and ~440 lines per one-resource apply for hashicorp/local, all read by the daemon only
 * to be dropped. INFO keeps exactly the lines we forward; someone who set TF_LOG or the
 * variables themselves (debugging a provider) keeps what they asked for.
 */
export function providerEnv(env: Record<string, string>): Record<string, string> {
  if (env.TF_LOG) return env;
  return { ...env, TF_LOG_SDK: env.TF_LOG_SDK ?? "INFO", TF_LOG_PROVIDER: env.TF_LOG_PROVIDER ?? "INFO" };
}

/** The single provider entry of a `-debug` reattach line, or undefined when it is not one. */
export function parseReattachLine(line: string): ReattachConfig | undefined {
  const m = REATTACH_LINE.exec(line);
  if (!m) return undefined;
  try {
    const all = JSON.parse(m[1]!) as Record<string, ReattachConfig>;
    const values = Object.values(all);
    const c = values[0];
    if (values.length !== 1 || !c || typeof c.Pid !== "number" || typeof c.Addr?.String !== "string" || typeof c.ProtocolVersion !== "number") return undefined;
    return c;
  } catch {
    return undefined;
  }
}

/** Resident memory of a process in MB (VmRSS of /proc/<pid>/status). */
export function residentMb(pid: number): number | undefined {
  try {
    const kb = /^VmRSS:\s+(\d+)\s+kB/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1];
    return kb === undefined ? undefined : Math.round(Number(kb) / 1024);
  } catch {
    return undefined;
  }
}


/**
 * Starts provider binaries with `-debug`, in their own process group, with the task's folder and
 * environment (what Terraform would give them), and waits for the reattach line.
 */
export function providerLauncher(opts: ProviderLaunchOptions): ProviderLauncher {
  const startTimeoutMs = opts.startTimeoutMs ?? 15_000;
  return {
    launch(spec: LaunchSpec): Promise<ProviderServer> {
      const name = spec.binary.slice(spec.binary.lastIndexOf("/") + 1);
      const child = startInGroup(spec.binary, ["-debug"], { cwd: spec.cwd, env: providerEnv(spec.env) });
      const pid = child.pid;
      const tracked = opts.track(spec.task, `${name} -debug`);
      let exited = false;
      const exitListeners: Array<() => void> = [];
      const gone = new Promise<void>((resolve) => {
        child.once("close", () => {
          exited = true;
          if (pid !== undefined) {
            // Anything the provider started in its group goes with it.
            signalGroup(pid, "SIGKILL");
            forgetLiveGroup(pid);
            tracked.remove(pid);
          }
          for (const l of exitListeners.splice(0)) l();
          resolve();
        });
      });
      if (pid !== undefined) {
        rememberLiveGroup(pid);
        tracked.add(pid);
      }
      child.unref();
      const say = (line: string) => {
        if (line.trim() && !CHATTY.test(line)) opts.output?.(spec.task, line);
      };
      createInterface({ input: child.stderr! }).on("line", say);
      const stdout = createInterface({ input: child.stdout! });
      for (const s of [child.stdout, child.stderr] as Array<{ unref?: () => void } | null>) s?.unref?.();

      const stop = async () => {
        if (!exited && pid !== undefined) {
          signalGroup(pid, "SIGTERM");
          const t = setTimeout(() => signalGroup(pid, "SIGKILL"), opts.killGraceMs);
          await gone;
          clearTimeout(t);
        }
      };
      return new Promise<ProviderServer>((resolve, reject) => {
        let settled = false;
        const fail = (why: string) => {
          if (settled) return;
          settled = true;
          clearTimeout(timer);
          void stop();
          reject(new Error(why));
        };
        const timer = setTimeout(() => fail(`no reattach line within ${startTimeoutMs} ms (a provider without debug mode)`), startTimeoutMs);
        child.once("error", (err) => fail(`could not start: ${err.message}`));
        void gone.then(() => fail("exited before serving"));
        stdout.on("line", (line) => {
          const reattach = settled ? undefined : parseReattachLine(line);
          if (!reattach) return say(line);
          if (reattach.Pid !== pid) return fail(`its reattach line names pid ${reattach.Pid}, not ${String(pid)}`);
          settled = true;
          clearTimeout(timer);
          resolve({
            pid,
            reattach,
            rssMb: () => (exited ? undefined : residentMb(pid)),
            get exited() {
              return exited;
            },
            onExit: (l) => (exited ? l() : void exitListeners.push(l)),
            stop,
          });
        });
      });
    },
  };
}
