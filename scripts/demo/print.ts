import type { RunEvent } from "./daemon.ts";
import type { StepReport } from "./scenario.ts";
import { describeSample } from "./traffic.ts";

const tty = process.stdout.isTTY && !process.env.NO_COLOR;
const paint = (code: number) => (s: string) => (tty ? `\x1b[${code}m${s}\x1b[0m` : s);
/** Terminal styles (plain text when stdout is not a terminal or NO_COLOR is set). */
export const style = { bold: paint(1), dim: paint(2), green: paint(32), red: paint(31), cyan: paint(36) };

/** Prints one line to stdout. */
export function say(line = ""): void {
  process.stdout.write(line + "\n");
}

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)} s`;
}

function clock(iso: string): string {
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : d.toTimeString().slice(0, 8);
}

/** `12:00:03  applied  +1 ~0 -1` or `12:00:03  failed   <message>`. */
export function describeEvent(e: RunEvent): string {
  const what = e.success ? style.green(e.outcome.padEnd(8)) : style.red("failed".padEnd(8));
  const detail = e.success ? (e.changes ? `+${e.changes.add} ~${e.changes.change} -${e.changes.destroy}` : "") : (e.error ?? "").split("\n")[0]!.slice(0, 160);
  return `${clock(e.time)}  ${what} ${detail}`.trimEnd();
}

/** Prints what a step observed: Consul, traffic through nginx, the allow-list and the tasks' runs. */
export function printStep(n: number, total: number, r: StepReport, write: (line: string) => void = say): void {
  write("");
  write(style.bold(`── Step ${n}/${total}: ${r.title} ──`));
  if (r.consulMs !== undefined) write(`  consul     passing web = ${r.pool.join(", ")}   ${style.dim(`(Consul saw it after ${seconds(r.consulMs)})`)}`);
  write(`  nginx      ${r.traffic.requests} requests → ${describeSample(r.traffic)}   ${style.dim(`(in sync ${seconds(r.syncedMs)} after the change)`)}`);
  write(`  firewall   allow-list (tag public) = ${r.allowList.join(", ")}`);
  write(style.dim(`  task runs during this step (${r.eventsFrom === "api" ? "GET /v1/status/tasks/<name>?include=events" : "from the daemon's log"}):`));
  for (const [task, events] of Object.entries(r.events)) {
    if (events.length === 0) {
      write(`  ${style.cyan(task.padEnd(10))} ${style.dim("no run (its data did not change)")}`);
      continue;
    }
    events.forEach((e, i) => write(`  ${i === 0 ? style.cyan(task.padEnd(10)) : " ".repeat(10)} ${describeEvent(e)}`));
  }
}
