/**
 * `npm run bench`: runs the benchmark suite against a real Consul and a real OpenTofu on
 * 127.0.0.1 and writes bench/results/latest.json and latest.md (see bench/README.md).
 *
 *   --quick                 small sizes (about 3 minutes)
 *   --help                  this text and every size with its default
 *   --only=a,b / --skip=a,b benchmarks by id: trigger, e2e, synthesis, throughput, scale, consul-load, lean, tfc, bindings
 *   --no-profile            do not re-run a missed benchmark under --cpu-prof
 *   --keep                  keep the scratch dirs ($TMPDIR/cts-bench-run-…: configs, working dirs)
 *   --out=<prefix>          write <prefix>.json and <prefix>.md instead
 *   --<size>=<value>        any size (see --help), e.g. --trigger-sizes=1,100 --throughput-tasks=20
 *                           (env: BENCH_TRIGGER_SIZES=1,100 …); flags win over env, env over --quick
 * Only the full default suite writes bench/results/latest.*; --quick, --only/--skip or any size
 * override write bench/results/tmp/run-<time>.* (git-ignored), as do the CPU profiles.
 */
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { machineInfo } from "./lib/machine.ts";
import { summarizeProfiles } from "./lib/profile.ts";
import { renderMarkdown, targetsTable, type RunReport } from "./lib/report.ts";
import type { BenchResult, Sizes } from "./lib/types.ts";

const HERE = dirname(fileURLToPath(import.meta.url));

/** The suite, in run order. `limitMs` bounds each child (it is killed past it); a benchmark that sleeps on purpose gets a limit from its sizes. */
const BENCHES: ReadonlyArray<{ id: string; module: string; limitMs: number | ((s: Sizes) => number) }> = [
  { id: "trigger", module: "trigger-latency.ts", limitMs: 6 * 60_000 },
  { id: "e2e", module: "end-to-end.ts", limitMs: 5 * 60_000 },
  { id: "synthesis", module: "synthesis.ts", limitMs: 5 * 60_000 },
  { id: "throughput", module: "throughput.ts", limitMs: 8 * 60_000 },
  { id: "scale", module: "scale-memory.ts", limitMs: 8 * 60_000 },
  { id: "consul-load", module: "consul-load.ts", limitMs: 4 * 60_000 },
  { id: "lean", module: "lean-daemon.ts", limitMs: 6 * 60_000 },
  { id: "tfc", module: "tfc-driver.ts", limitMs: 8 * 60_000 },
  // Its quiet spells sleep: 12 min for the rest, and each spell with 90 s for its changes.
  { id: "bindings", module: "bindings.ts", limitMs: (s) => 12 * 60_000 + s.bindingQuietSpells * (s.bindingQuietSeconds + 90) * 1000 },
];

const DEFAULTS: Sizes = {
  triggerSizes: [1, 100, 1000],
  triggerSamples: 25,
  e2eSamples: 12,
  e2eInitSamples: 5,
  synthSizes: [10, 100, 1000, 5000],
  synthTimeBudgetMs: 3000,
  throughputTasks: 50,
  throughputServices: 50,
  throughputConcurrency: [1, 4, 8],
  scaleServices: 10_000,
  scaleInstances: 3,
  scaleIdleSeconds: 90,
  syntheses: 2000,
  synthesesInProcess: 600,
  loadTasks: 30,
  loadIdleSeconds: 20,
  loadChurnSeconds: 15,
  loadChurnPerSecond: 5,
  leanChanges: 40,
  leanRuns: 100,
  leanStarts: 4,
  bindingChanges: 10,
  bindingQuietSeconds: 600,
  bindingQuietSpells: 3,
  bindingStarts: 3,
  bindingSynths: 3,
  tfcSamples: 10,
  tfcTasks: 20,
};

const QUICK: Partial<Sizes> = {
  triggerSizes: [1, 1000],
  triggerSamples: 6,
  e2eSamples: 3,
  e2eInitSamples: 2,
  synthSizes: [10, 1000],
  synthTimeBudgetMs: 600,
  throughputTasks: 10,
  throughputServices: 10,
  throughputConcurrency: [1, 4],
  scaleServices: 1000,
  scaleIdleSeconds: 15,
  syntheses: 300,
  synthesesInProcess: 150,
  loadTasks: 10,
  loadIdleSeconds: 5,
  loadChurnSeconds: 5,
  leanChanges: 10,
  leanRuns: 30,
  leanStarts: 2,
  bindingChanges: 5,
  bindingQuietSeconds: 150,
  bindingQuietSpells: 1,
  bindingStarts: 1,
  bindingSynths: 2,
  tfcSamples: 3,
  tfcTasks: 20,
};

const kebab = (k: string) => k.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
const envName = (k: string) => `BENCH_${kebab(k).replace(/-/g, "_").toUpperCase()}`;

function parseArgs(argv: string[]) {
  const flags = new Map<string, string>();
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (!a.startsWith("--")) throw new Error(`unexpected argument '${a}' (flags look like --quick or --trigger-sizes=1,100)`);
    const eq = a.indexOf("=");
    if (eq > 0) flags.set(a.slice(2, eq), a.slice(eq + 1));
    else if (argv[i + 1] !== undefined && !argv[i + 1]!.startsWith("--") && !["quick", "keep", "no-profile"].includes(a.slice(2))) flags.set(a.slice(2), argv[++i]!);
    else flags.set(a.slice(2), "true");
  }
  return flags;
}

function resolveSizes(flags: Map<string, string>, quick: boolean): { sizes: Sizes; overridden: string[] } {
  const sizes: Record<string, unknown> = { ...DEFAULTS, ...(quick ? QUICK : {}) };
  const overridden: string[] = [];
  for (const key of Object.keys(DEFAULTS)) {
    const raw = flags.get(kebab(key)) ?? process.env[envName(key)];
    if (raw === undefined) continue;
    const isList = Array.isArray((DEFAULTS as unknown as Record<string, unknown>)[key]);
    const parse = (s: string) => {
      const n = Number(s.replace(/_/g, ""));
      if (!Number.isFinite(n) || n < 0) throw new Error(`--${kebab(key)}: '${s}' is not a number`);
      return n;
    };
    sizes[key] = isList ? raw.split(",").filter(Boolean).map(parse) : parse(raw);
    flags.delete(kebab(key));
    overridden.push(key);
  }
  return { sizes: sizes as unknown as Sizes, overridden };
}

function runChild(module: string, ctxFile: string, resultFile: string, limitMs: number, profileDir?: string): Promise<void> {
  const args = ["--conditions=cts-source", "--import", "tsx", "--max-old-space-size=4096", "--expose-gc"];
  if (profileDir) args.push("--cpu-prof", `--cpu-prof-dir=${profileDir}`);
  args.push(join(HERE, "lib", "child.ts"), module, ctxFile, resultFile, ...(profileDir ? ["profile"] : []));
  return new Promise((resolve) => {
    const child = spawn(process.execPath, args, { stdio: ["ignore", "inherit", "inherit"] });
    const timer = setTimeout(() => {
      process.stderr.write(`[bench] ${module} passed its limit of ${limitMs / 60_000} min: stopping it\n`);
      child.kill("SIGTERM");
      setTimeout(() => child.kill("SIGKILL"), 15_000).unref();
    }, limitMs);
    child.on("exit", () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

async function main() {
  const flags = parseArgs(process.argv.slice(2));
  const quick = flags.get("quick") === "true";
  const keep = flags.get("keep") === "true";
  const profile = flags.get("no-profile") !== "true";
  const only = flags.get("only")?.split(",").filter(Boolean);
  const skip = flags.get("skip")?.split(",").filter(Boolean) ?? [];
  for (const id of [...(only ?? []), ...skip]) if (!BENCHES.some((b) => b.id === id)) throw new Error(`unknown benchmark '${id}'. Known: ${BENCHES.map((b) => b.id).join(", ")}`);
  if (flags.has("help")) {
    const usage = readFileSync(fileURLToPath(import.meta.url), "utf8").split("\n").filter((l) => l.startsWith(" *")).map((l) => l.slice(3)).join("\n");
    process.stdout.write(`${usage}\n\nSizes (defaults): ${Object.entries(DEFAULTS).map(([k, v]) => `--${kebab(k)}=${String(v)}`).join(" ")}\n`);
    return;
  }
  const { sizes, overridden } = resolveSizes(flags, quick);
  const out = flags.get("out");
  for (const k of ["quick", "keep", "no-profile", "only", "skip", "out"]) flags.delete(k);
  if (flags.size) throw new Error(`unknown flag(s): ${[...flags.keys()].map((k) => `--${k}`).join(", ")}. Sizes: ${Object.keys(DEFAULTS).map((k) => `--${kebab(k)}`).join(" ")}`);
  // Only the full default suite replaces bench/results/latest.*: anything else is not the reference.
  const partial = quick || !!only || skip.length > 0 || overridden.length > 0;
  const outPrefix = out ?? join(HERE, "results", partial ? `tmp/run-${Date.now()}` : "latest");

  const runId = `run-${new Date().toISOString().replace(/[:.]/g, "-")}`;
  const scratch = join(tmpdir(), `cts-bench-${runId}`);
  const profRoot = join(HERE, "results", "tmp", runId, "profiles");
  mkdirSync(scratch, { recursive: true });
  const machine = machineInfo();
  process.stderr.write(`[bench] machine: ${machine.cpus} cores, ${machine.memoryGiB} GiB; ${machine.tofu}; ${machine.consul}; \`node -e 0\` ${machine.nodeStartMs} ms\n`);
  if (machine.loadAtStart > machine.cpus * 0.5) process.stderr.write(`[bench] WARNING: load average ${machine.loadAtStart} on ${machine.cpus} cores: other work will skew the numbers\n`);

  const started = performance.now();
  const results: BenchResult[] = [];
  for (const b of BENCHES) {
    if ((only && !only.includes(b.id)) || skip.includes(b.id)) continue;
    const dir = join(scratch, b.id);
    mkdirSync(dir, { recursive: true });
    const ctxFile = join(dir, "context.json");
    const resultFile = join(dir, "result.json");
    writeFileSync(ctxFile, JSON.stringify({ sizes, quick, tmp: dir }));
    process.stderr.write(`[bench] ── ${b.id} ──\n`);
    const loadAvgStart = Math.round(loadavg()[0]! * 100) / 100;
    const limitMs = typeof b.limitMs === "function" ? b.limitMs(sizes) : b.limitMs;
    await runChild(b.module, ctxFile, resultFile, limitMs);
    let result: BenchResult;
    try {
      result = JSON.parse(readFileSync(resultFile, "utf8")) as BenchResult;
    } catch {
      result = { name: b.id, title: b.id, method: "", tables: [], targets: [], notes: [], data: {}, durationMs: 0, error: "the benchmark process ended without a result (killed at its time limit or crashed; see the log above)" };
    }
    result.name = b.id;
    result.loadAvgStart = loadAvgStart;
    if (profile && !result.error && result.targets?.some((t) => t.met === false)) {
      const mod = (await import(`./${b.module}`)) as { profile?: unknown };
      if (mod.profile) {
        process.stderr.write(`[bench] ${b.id} missed a target: re-running its profile workload under --cpu-prof\n`);
        const pdir = join(profRoot, b.id);
        const pdata = join(dir, "profile");
        mkdirSync(pdata, { recursive: true });
        writeFileSync(join(pdata, "context.json"), JSON.stringify({ sizes, quick, tmp: pdata }));
        await runChild(b.module, join(pdata, "context.json"), join(pdata, "result.json"), limitMs, pdir);
        let what = `${b.id} profile workload`;
        let windowUs: [number, number] | undefined;
        try {
          const pres = JSON.parse(readFileSync(join(pdata, "result.json"), "utf8")) as { method?: string; profileWindowUs?: [number, number] };
          what = pres.method || what;
          windowUs = pres.profileWindowUs;
        } catch {
          /* keep the default label */
        }
        const summary = summarizeProfiles(pdir, what, windowUs);
        if (summary) result.profile = summary;
        // A profile workload may add tables of its own (e.g. a heap snapshot summary).
        try {
          const pres = JSON.parse(readFileSync(join(pdata, "result.json"), "utf8")) as BenchResult;
          if (pres.tables?.length) result.tables = [...(result.tables ?? []), ...pres.tables];
          if (pres.notes?.length) result.notes = [...(result.notes ?? []), ...pres.notes];
        } catch {
          /* no extra tables */
        }
      }
    }
    results.push(result);
    if (!keep) rmSync(dir, { recursive: true, force: true });
  }
  const totalSeconds = (performance.now() - started) / 1000;
  const report: RunReport = {
    date: new Date().toISOString(),
    command: ["npm run bench", ...(process.argv.slice(2).length ? ["--", ...process.argv.slice(2)] : [])].join(" "),
    quick,
    totalSeconds: Math.round(totalSeconds),
    machine,
    sizes,
    results,
  };
  mkdirSync(dirname(outPrefix), { recursive: true });
  writeFileSync(`${outPrefix}.json`, JSON.stringify(report, null, 2) + "\n");
  writeFileSync(`${outPrefix}.md`, renderMarkdown(report));
  if (!keep) rmSync(scratch, { recursive: true, force: true });
  process.stdout.write(`\n${targetsTable(results)}\n\n`);
  process.stdout.write(`[bench] ${Math.round(totalSeconds)} s in total; wrote ${outPrefix}.json and ${outPrefix}.md${existsSync(profRoot) ? `; CPU profiles in ${profRoot}` : ""}\n`);
  if (results.some((r) => r.error)) process.exitCode = 1;
}

main().catch((err: unknown) => {
  process.stderr.write(`[bench] ${err instanceof Error ? err.message : String(err)}\n`);
  process.exitCode = 2;
});
