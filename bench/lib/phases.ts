import type { DaemonProcess } from "./daemon-process.ts";

/** Reads a daemon's phase histograms' sums from its API's /metrics: the time (ms) each phase took since the last read. */
export function phaseReader() {
  let apiPort: number | undefined;
  const lastSums: Record<string, number> = {};
  return async (daemon: DaemonProcess): Promise<Record<string, number>> => {
    if (apiPort === undefined) {
      const line = daemon.lines().find((l) => /api: listening on/.test(l)) ?? "";
      const m = /listening on \S+:(\d+)/.exec(line);
      apiPort = m ? Number(m[1]) : 0;
    }
    if (!apiPort) return {};
    const text = await fetch(`http://127.0.0.1:${apiPort}/metrics`).then((r) => r.text()).catch(() => "");
    const out: Record<string, number> = {};
    for (const m of text.matchAll(/^cts_task_run_phase_duration_seconds_sum\{[^}]*phase="(\w+)"[^}]*\} ([\d.e+-]+)/gm)) {
      const sum = Number(m[2]) * 1000;
      out[m[1]!] = sum - (lastSums[m[1]!] ?? 0);
      lastSums[m[1]!] = sum;
    }
    return out;
  };
}
