/**
 * `npm run chaos`: failure scenarios against a real Consul, real OpenTofu and real `cts`
 * processes on 127.0.0.1; writes bench/results/chaos.json and chaos.md (see bench/README.md).
 *
 *   --quick                 short scenarios (about 1.5 minutes; writes bench/results/tmp/chaos-<time>.*)
 *   --only=a,b / --skip=a,b scenarios by id: flapping, consul-restart, kill9, fresh-tasks, hostile
 *   --out=<prefix>          write <prefix>.json and <prefix>.md
 * At the default sizes, --only/--skip replace those scenarios in bench/results/chaos.{json,md} and
 * keep the others from earlier runs (each section names its run); other sizes write to tmp/.
 *   --label=<text>          a name for the run in the report's title (e.g. "pre-fix run")
 *   --keep                  keep the scratch folder ($TMPDIR/cts-chaos-…)
 *   --<size>=<n>            any size (see --help), e.g. --flap-seconds=20 --kill-loops=3
 *                           (env: CHAOS_FLAP_SECONDS=20 …)
 * Each scenario runs in its own Node process with a time limit; past it the scenario is stopped
 * and reported as "failed: …". Every process a scenario started (Consul, cts, tofu, providers)
 * is stopped when it ends, on its time limit and on Ctrl-C.
 */
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { machineInfo } from "../lib/machine.ts";
import { describe, killAll, processesUnder } from "./lib/procs.ts";
import { figuresTable, mergeReports, renderChaos, type ChaosReport, type ScenarioRecord } from "./lib/render.ts";
import type { ChaosSizes } from "./lib/types.ts";

const HERE = dirname(fileURLToPath(import.meta.url));
const BENCH = dirname(HERE);

/** The scenarios, in run order; `limitMs` bounds each (typical run times are in bench/README.md). */
const SCENARIOS = [
  { id: "flapping", module: "chaos/flapping.ts", title: "1. Flapping", limitMs: 4 * 60_000 },
  { id: "consul-restart", module: "chaos/consul-restart.ts", title: "2. Consul kill/restart", limitMs: 3 * 60_000 },
  { id: "kill9", module: "chaos/kill-loop.ts", title: "3. kill -9 loops", limitMs: 6 * 60_000 },
  { id: "fresh-tasks", module: "chaos/fresh-tasks.ts", title: "4. Fresh tasks", limitMs: 4 * 60_000 },
  { id: "hostile", module: "chaos/hostile-catalog.ts", title: "5. Hostile data", limitMs: 5 * 60_000 },
] as const;

const DEFAULTS: ChaosSizes = {
  flapSeconds: 60,
  flapRate: 600,
  flapInstances: 40,
  flapWorkers: 16,
  consulDownSeconds: 10,
  killLoops: 5,
  killSleepSeconds: 4,
  freshTasks: 40,
  freshConcurrency: 8,
  freshRuns: 5,
  hostileGenerated: 250,
  hostileSecrets: 9,
  hostileSeed: 0,
};
const QUICK: Partial<ChaosSizes> = { flapSeconds: 15, consulDownSeconds: 5, killLoops: 2, freshTasks: 16, freshRuns: 2, hostileGenerated: 40, hostileSecrets: 3 };

const kebab = (k: string) => k.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
const envName = (k: string) => `CHAOS_${kebab(k).replace(/-/g, "_").toUpperCase()}`;

function parseFlags(argv: string[]): Map<string, string> {
  const flags = new Map<string, string>();
  for (const a of argv) {
    const m = /^--([a-z0-9-]+)(?:=(.*))?$/.exec(a);
    if (!m) throw new Error(`unexpected argument '${a}' (flags look like --quick or --flap-seconds=20)`);
    flags.set(m[1]!, m[2] ?? "true");
  }
  return flags;
}

function sizesFrom(flags: Map<string, string>, quick: boolean): { sizes: ChaosSizes; overridden: boolean } {
  const sizes: Record<string, number> = { ...DEFAULTS, ...(quick ? QUICK : {}) };
  let overridden = false;
  for (const key of Object.keys(DEFAULTS)) {
    const raw = flags.get(kebab(key)) ?? process.env[envName(key)];
    flags.delete(kebab(key));
    if (raw === undefined) continue;
    const n = Number(raw);
    if (!Number.isFinite(n) || n <= 0) throw new Error(`--${kebab(key)}: '${raw}' is not a positive number`);
    sizes[key] = n;
    overridden = true;
  }
  return { sizes: sizes as unknown as ChaosSizes, overridden };
}

let current: ChildProcess | undefined;

/** Runs one scenario in bench/lib/child.ts; its TMPDIR is the scenario's folder, so Consul's data dir is too. */
function runChild(module: string, ctxFile: string, resultFile: string, tmp: string, limitMs: number): Promise<"done" | "limit"> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ["--import", "tsx", join(BENCH, "lib", "child.ts"), module, ctxFile, resultFile], {
      stdio: ["ignore", "inherit", "inherit"],
      env: { ...process.env, TMPDIR: tmp },
    });
    current = child;
    let hitLimit = false;
    const timer = setTimeout(() => {
      hitLimit = true;
      process.stderr.write(`[chaos] ${module} passed its limit of ${limitMs / 60_000} min: stopping it\n`);
      child.kill("SIGTERM");
      setTimeout(() => child.kill("SIGKILL"), 20_000).unref();
    }, limitMs);
    child.on("exit", () => {
      clearTimeout(timer);
      current = undefined;
      resolve(hitLimit ? "limit" : "done");
    });
  });
}

function gitCommit(): string {
  try {
    const sha = execFileSync("git", ["rev-parse", "--short", "HEAD"], { cwd: BENCH, encoding: "utf8" }).trim();
    const dirty = execFileSync("git", ["status", "--porcelain", "--", "src"], { cwd: BENCH, encoding: "utf8" }).trim();
    return dirty ? `${sha} (src/ modified)` : sha;
  } catch {
    return "unknown";
  }
}

/** The report at `file` (undefined when there is none or it cannot be read). */
function readReport(file: string): ChaosReport | undefined {
  try {
    return JSON.parse(readFileSync(file, "utf8")) as ChaosReport;
  } catch {
    return undefined;
  }
}

async function main() {
  const flags = parseFlags(process.argv.slice(2));
  if (flags.has("help")) {
    const usage = readFileSync(fileURLToPath(import.meta.url), "utf8").split("\n").filter((l) => l.startsWith(" *")).map((l) => l.slice(3)).join("\n");
    process.stdout.write(`${usage}\n\nSizes (defaults): ${Object.entries(DEFAULTS).map(([k, v]) => `--${kebab(k)}=${v}`).join(" ")}\n`);
    return;
  }
  const quick = flags.get("quick") === "true";
  const keep = flags.get("keep") === "true";
  const only = flags.get("only")?.split(",").filter(Boolean);
  const skip = flags.get("skip")?.split(",").filter(Boolean) ?? [];
  for (const id of [...(only ?? []), ...skip]) if (!SCENARIOS.some((s) => s.id === id)) throw new Error(`unknown scenario '${id}'. Known: ${SCENARIOS.map((s) => s.id).join(", ")}`);
  const label = flags.get("label");
  const out = flags.get("out");
  for (const k of ["quick", "keep", "only", "skip", "label", "out"]) flags.delete(k);
  const { sizes, overridden } = sizesFrom(flags, quick);
  if (flags.size) throw new Error(`unknown flag(s): ${[...flags.keys()].map((k) => `--${k}`).join(", ")} (see --help)`);
  // Other sizes than the defaults go to tmp/; a selection of scenarios at the default sizes
  // replaces those scenarios in chaos.* and keeps the others (each section names its run).
  const resized = quick || overridden;
  const outPrefix = out ?? join(BENCH, "results", resized ? `tmp/chaos-${Date.now()}` : "chaos");
  const mergeInto = !out && !resized && (!!only || skip.length > 0) ? `${outPrefix}.json` : undefined;

  const scratch = join(tmpdir(), `cts-chaos-${new Date().toISOString().replace(/[:.]/g, "-")}`);
  mkdirSync(scratch, { recursive: true });
  let swept = 0;
  const sweep = (why: string) => {
    const left = processesUnder(scratch);
    if (left.length) process.stderr.write(`[chaos] ${why}: killing ${left.length} leftover processes (${describe(left)})\n`);
    swept += killAll(left);
  };
  let interrupted = false;
  for (const sig of ["SIGINT", "SIGTERM"] as const) {
    process.on(sig, () => {
      if (interrupted) return;
      interrupted = true;
      process.stderr.write(`[chaos] ${sig}: stopping the running scenario and everything it started\n`);
      const c = current;
      c?.kill("SIGTERM");
      const finish = () => {
        sweep("interrupted");
        if (!keep) rmSync(scratch, { recursive: true, force: true });
        process.exit(130);
      };
      if (c) {
        c.once("exit", finish);
        setTimeout(() => (c.kill("SIGKILL"), setTimeout(finish, 500)), 20_000).unref();
      } else finish();
    });
  }

  const machine = machineInfo();
  process.stderr.write(`[chaos] ${machine.cpus} cores, load ${machine.loadAtStart}; ${machine.tofu}; ${machine.consul}; scratch ${scratch}\n`);
  const started = performance.now();
  const records: ScenarioRecord[] = [];
  for (const s of SCENARIOS) {
    if ((only && !only.includes(s.id)) || skip.includes(s.id) || interrupted) continue;
    const dir = join(scratch, s.id);
    mkdirSync(dir, { recursive: true });
    const ctxFile = join(dir, "context.json");
    const resultFile = join(dir, "result.json");
    writeFileSync(ctxFile, JSON.stringify({ sizes, quick, tmp: dir }));
    process.stderr.write(`[chaos] ── ${s.id} ──\n`);
    const loadAvgStart = Math.round(loadavg()[0]! * 100) / 100;
    const ended = await runChild(s.module, ctxFile, resultFile, dir, s.limitMs);
    sweep(`after ${s.id}`);
    let rec: ScenarioRecord;
    try {
      rec = { ...(JSON.parse(readFileSync(resultFile, "utf8")) as ScenarioRecord), id: s.id };
    } catch {
      rec = { id: s.id, error: ended === "limit" ? `time limit of ${s.limitMs / 60_000} min reached` : "the scenario process ended without a result (see the log above)" } as ScenarioRecord;
    }
    if (!rec.figures) {
      const dash = "–";
      rec.figures = { scenario: s.title, changes: dash, runs: dash, errors: dash, orphans: dash, rss: dash, recovery: dash, verdict: `failed: ${(rec.error ?? "no result").split("\n")[0]!.slice(0, 200)}` };
    }
    rec.loadAvgStart = loadAvgStart;
    records.push(rec);
    process.stderr.write(`[chaos] ${s.id}: ${rec.figures.verdict}\n`);
    if (!keep) rmSync(dir, { recursive: true, force: true });
  }
  const latest: ChaosReport = {
    date: new Date().toISOString(),
    command: ["npm run chaos", ...(process.argv.length > 2 ? ["--", ...process.argv.slice(2)] : [])].join(" "),
    ...(label ? { label } : {}),
    commit: gitCommit(),
    totalSeconds: Math.round((performance.now() - started) / 1000),
    machine,
    sizes,
    sweptAfterScenarios: swept,
    scenarios: records,
  };
  const report = mergeInto ? mergeReports(readReport(mergeInto), latest, SCENARIOS.map((s) => s.id)) : latest;
  mkdirSync(dirname(outPrefix), { recursive: true });
  writeFileSync(`${outPrefix}.json`, JSON.stringify(report, null, 2) + "\n");
  writeFileSync(`${outPrefix}.md`, renderChaos(report));
  if (!keep) rmSync(scratch, { recursive: true, force: true });
  process.stdout.write(`\n${figuresTable(records)}\n\n[chaos] ${latest.totalSeconds} s; wrote ${outPrefix}.json and ${outPrefix}.md${mergeInto ? " (the other scenarios kept from earlier runs)" : ""}\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`[chaos] ${err instanceof Error ? err.message : String(err)}\n`);
  process.exitCode = 2;
});
