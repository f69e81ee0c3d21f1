/**
 * 7. A lean daemon: the real `cts watch --no-buffer` process (dist/cli/main.js as installed, warm providers on as by
 * default) against a real Consul agent and OpenTofu. Measures the CPU of the daemon process itself
 * (all its threads, not Terraform or the providers) per catalog change that ends in an applied
 * run, its RSS with three tasks after 100 runs, and the time from spawning it to the first run
 * applied, after a restart (working dir initialised) and fresh.
 */
import { spawn } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { startConsul, type ConsulAgent } from "../test/support/consul.ts";
import { lit, writeBenchConfig } from "./lib/config.ts";
import { buildPackage, startDaemonProcess, type DaemonProcess } from "./lib/daemon-process.ts";
import { bytes, median, ms, round, sleep, summarize } from "./lib/stats.ts";
import type { BenchContext, BenchFn, ResultTable, TargetCheck } from "./lib/types.ts";

const MODULE = fileURLToPath(new URL("../modules/cts-echo", import.meta.url));
const CPU_TARGET_MS = { module: 10, class: 20 };
const RSS_TARGET = 80 * 1024 * 1024;
const FIRST_SYNC_TARGET_MS = 1000;
/** Changes before the measured ones (worker start, provider processes, JIT). */
const WARMUP = 5;
/** Quiet time between changes: each change's CPU is counted up to the next write. */
const GAP_MS = 150;
const RESOURCES = 10;

type Kind = "module" | "class";

/**
 * CPU time of a process's threads now, in ms (/proc/<pid>/task/<tid>/schedstat: nanoseconds on
 * the CPU): the main thread and all the others (synthesis worker, V8's GC helpers, libuv's pool).
 * /proc/<pid>/stat counts in 10 ms ticks, too coarse for one event; threads that exit between two
 * samples drop out here, so the loop's mean is also taken from /proc/<pid>/stat.
 */
export function threadCpuMs(pid: number): { main: number; all: number } {
  let all = 0;
  let main = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const ms = Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, "utf8").split(" ")[0]) / 1e6;
      all += ms;
      if (tid === String(pid)) main = ms;
    } catch {
      /* the thread ended meanwhile */
    }
  }
  return { main, all };
}

/** A task expression for the config: a ModuleTask on cts-echo, or a class task with 10 local_files. */
function taskExpr(kind: Kind, name: string, service: string, dir: string): string {
  if (kind === "module") return `new ModuleTask({ name: ${lit(name)}, condition: services({ names: [${lit(service)}] }), module: ${lit(MODULE)}, variables: { output_path: ${lit(join(dir, `${name}.json`))} } })`;
  return `new PerInstanceFiles({ name: ${lit(name)}, path: ${lit(join(dir, name))}, condition: services({ names: [${lit(service)}] }) })`;
}

/** One instance (re)registered with a new `version` meta: every task below renders it. */
const change = (consul: ConsulAgent, service: string, k: number, rev: number) =>
  consul.register({ Name: service, ID: `${service}-${k}`, Address: `10.7.0.${k + 1}`, Port: 7000 + k, Meta: { version: String(rev) } });

async function daemonFor(ctx: BenchContext, consul: ConsulAgent, label: string, tasks: string[]): Promise<{ file: string; dir: string }> {
  const dir = join(ctx.tmp, label);
  await mkdir(dir, { recursive: true });
  const file = await writeBenchConfig({ dir, consulAddress: consul.address, backendPath: `cts-bench/lean/${label}`, tasks });
  return { file, dir };
}

const appliedRe = (task: string) => new RegExp(`task '${task}': (applied|failed)`);

async function waitApplied(d: DaemonProcess, task: string, p: Promise<{ line: string; t: number }>): Promise<number> {
  const r = await p;
  if (!/ applied/.test(r.line)) throw new Error(`task '${task}' failed: ${r.line}`);
  return r.t;
}

/** Per-event CPU of the daemon with one task: `changes` measured changes after WARMUP. */
async function perEventCpu(ctx: BenchContext, consul: ConsulAgent, kind: Kind, changes: number) {
  const service = `lean-${kind}`;
  const instances = kind === "class" ? RESOURCES : 1;
  for (let k = 0; k < instances; k++) await change(consul, service, k, 0);
  const { file, dir } = await daemonFor(ctx, consul, `cpu-${kind}`, [taskExpr(kind, "t", service, join(ctx.tmp, `cpu-${kind}`))]);
  // LEAN_PERF=<prefix> (by hand): `perf record` of the daemon over the measured changes, with JIT symbols.
  const perfOut = process.env.LEAN_PERF ? `${process.env.LEAN_PERF}-${kind}.data` : undefined;
  const d = startDaemonProcess(file, { cwd: dir, built: true, ...(perfOut ? { nodeArgs: ["--perf-basic-prof"] } : {}) });
  ctx.onCleanup(() => d.stop());
  let perf: ReturnType<typeof spawn> | undefined;
  try {
    await waitApplied(d, "t", d.waitForLine(appliedRe("t"), 120_000, { seen: true }));
    const perEvent: number[] = [];
    const mainThread: number[] = [];
    const latency: number[] = [];
    let before = { main: 0, all: 0 };
    let stat0 = d.sample();
    for (let i = 1; i <= WARMUP + changes + 1; i++) {
      await sleep(GAP_MS);
      const now = threadCpuMs(d.pid);
      if (i === WARMUP + 1) {
        stat0 = d.sample();
        ctx.window.begin();
        if (perfOut) perf = spawn("perf", ["record", "-F", "1999", "-g", "-p", String(d.pid), "-o", perfOut], { stdio: "ignore" });
        if (process.env.LEAN_STRACE) perf = spawn("strace", ["-c", "-o", `${process.env.LEAN_STRACE}-${kind}.txt`, "-p", String(d.pid)], { stdio: "ignore" });
      } else if (i > WARMUP + 1) {
        perEvent.push(now.all - before.all);
        mainThread.push(now.main - before.main);
      }
      before = now;
      if (i > WARMUP + changes) break;
      const applied = d.waitForLine(appliedRe("t"), 60_000);
      const t0 = performance.now();
      await change(consul, service, i % instances, i);
      const t = await waitApplied(d, "t", applied);
      if (i > WARMUP) latency.push(t - t0);
    }
    const stat1 = d.sample();
    if (perf) {
      const exited = new Promise((r) => perf!.once("exit", r));
      perf.kill("SIGINT");
      await exited;
    }
    const meanFromStatMs = ((stat1.cpuSec - stat0.cpuSec) * 1000) / changes;
    ctx.log(`${kind}: daemon CPU per event p50 ${ms(median(perEvent))} (main thread ${ms(median(mainThread))}), mean ${ms(meanFromStatMs)} (/proc stat); change → applied p50 ${ms(median(latency))}; RSS ${bytes(stat1.rssBytes)}`);
    return { perEvent, mainThread, latency, meanFromStatMs, rss: stat1.rssBytes };
  } finally {
    await d.stop();
  }
}

/** RSS of the daemon with three tasks on one service after `runs` applied runs in all. */
async function rssAfterRuns(ctx: BenchContext, consul: ConsulAgent, kind: Kind, runs: number) {
  const service = `lean-rss-${kind}`;
  const instances = kind === "class" ? RESOURCES : 1;
  for (let k = 0; k < instances; k++) await change(consul, service, k, 0);
  const names = ["a", "b", "c"];
  const base = join(ctx.tmp, `rss-${kind}`);
  const { file, dir } = await daemonFor(ctx, consul, `rss-${kind}`, names.map((n) => taskExpr(kind, n, service, base)));
  const d = startDaemonProcess(file, { cwd: dir, built: true });
  ctx.onCleanup(() => d.stop());
  try {
    for (const n of names) await waitApplied(d, n, d.waitForLine(appliedRe(n), 120_000, { seen: true }));
    let done = names.length;
    let peak = 0;
    for (let i = 1; done < runs; i++) {
      await sleep(GAP_MS);
      const all = names.map((n) => waitApplied(d, n, d.waitForLine(appliedRe(n), 60_000)));
      await change(consul, service, i % instances, i);
      await Promise.all(all);
      done += names.length;
      peak = Math.max(peak, d.sample().rssBytes);
    }
    await sleep(2_000);
    const s = d.sample();
    return { runs: done, rss: s.rssBytes, peak: Math.max(peak, s.peakRssBytes) };
  } finally {
    await d.stop();
  }
}

/** Spawn → first run applied, `starts` times on the same working dir (a change while stopped), after one fresh start. */
async function firstSync(ctx: BenchContext, consul: ConsulAgent, starts: number) {
  const service = "lean-start";
  await change(consul, service, 0, 0);
  const fresh: number[] = [];
  const restart: number[] = [];
  let rev = 1;
  for (let f = 0; f < Math.max(1, Math.ceil(starts / 2)); f++) {
    const { file, dir } = await daemonFor(ctx, consul, `start-${f}`, [taskExpr("module", "s", service, join(ctx.tmp, `start-${f}`))]);
    for (let r = 0; r <= (f === 0 ? starts : 0); r++) {
      if (r > 0) await change(consul, service, 0, rev++);
      const t0 = performance.now();
      const d = startDaemonProcess(file, { cwd: dir, built: true });
      ctx.onCleanup(() => d.stop());
      try {
        const t = await waitApplied(d, "s", d.waitForLine(appliedRe("s"), 120_000, { seen: true }));
        (r === 0 ? fresh : restart).push(t - t0);
      } finally {
        await d.stop();
      }
    }
  }
  return { fresh, restart };
}

export const run: BenchFn = async (ctx) => {
  const { leanChanges, leanRuns, leanStarts } = ctx.sizes;
  ctx.log("building the package (npm run build): the daemon runs as installed, from dist/");
  buildPackage();
  const consul = await startConsul();
  ctx.onCleanup(() => consul.stop());
  ctx.log(`per-event CPU: ModuleTask, ${leanChanges} changes`);
  const cpuModule = await perEventCpu(ctx, consul, "module", leanChanges);
  ctx.log(`per-event CPU: class task with ${RESOURCES} resources, ${leanChanges} changes`);
  const cpuClass = await perEventCpu(ctx, consul, "class", leanChanges);
  ctx.window.end();
  ctx.log(`RSS: 3 ModuleTasks, ${leanRuns} runs`);
  const rssModule = await rssAfterRuns(ctx, consul, "module", leanRuns);
  ctx.log(`RSS: 3 class tasks, ${leanRuns} runs`);
  const rssClass = await rssAfterRuns(ctx, consul, "class", leanRuns);
  ctx.log(`first sync: ${leanStarts} restarts and fresh starts`);
  const starts = await firstSync(ctx, consul, leanStarts);

  const cm = summarize(cpuModule.perEvent);
  const cc = summarize(cpuClass.perEvent);
  const lm = summarize(cpuModule.latency);
  const lc = summarize(cpuClass.latency);
  const sr = summarize(starts.restart);
  const sf = summarize(starts.fresh);
  const cpu: ResultTable = {
    title: "CPU of the daemon process per change that ends in an applied run (its own threads; Terraform and providers excluded)",
    columns: ["Task", "n", "CPU p50", "… main thread p50", "CPU p95", "CPU mean (from /proc/<pid>/stat)", "change → applied p50", "RSS after"],
    rows: [
      ["ModuleTask (modules/cts-echo, one instance)", cm.n, ms(cm.p50), ms(median(cpuModule.mainThread)), ms(cm.p95), ms(cpuModule.meanFromStatMs), ms(lm.p50), bytes(cpuModule.rss)],
      [`class task, ${RESOURCES} local_file resources (PerInstanceFiles)`, cc.n, ms(cc.p50), ms(median(cpuClass.mainThread)), ms(cc.p95), ms(cpuClass.meanFromStatMs), ms(lc.p50), bytes(cpuClass.rss)],
    ],
    notes: [`Each change re-registers one instance with a new meta value (the task renders it); ${WARMUP} changes of warm-up first; CPU counted from just before one write to just before the next (${GAP_MS} ms apart after the apply).`],
  };
  const mem: ResultTable = {
    title: `RSS of the daemon with 3 tasks after ${leanRuns} runs`,
    columns: ["Tasks", "runs", "RSS (2 s after the last run)", "peak"],
    rows: [
      ["3 ModuleTasks", rssModule.runs, bytes(rssModule.rss), bytes(rssModule.peak)],
      [`3 class tasks (${RESOURCES} resources each; the synthesis worker lives in the same process)`, rssClass.runs, bytes(rssClass.rss), bytes(rssClass.peak)],
    ],
  };
  const sync: ResultTable = {
    title: "First sync of one ModuleTask: process spawn → first run applied (log line seen)",
    columns: ["Start", "n", "p50", "max"],
    rows: [
      ["restart: working dir initialised (init skipped), one change while stopped", sr.n, ms(sr.p50), ms(sr.max)],
      ["fresh working dir (init, workspace)", sf.n, ms(sf.p50), ms(sf.max)],
    ],
  };
  const targets: TargetCheck[] = [
    { id: "lean.cpu.module", what: "Daemon CPU per event, ModuleTask (p50)", target: `≤ ${CPU_TARGET_MS.module} ms`, actual: ms(cm.p50), met: cm.p50 <= CPU_TARGET_MS.module },
    { id: "lean.cpu.class", what: `Daemon CPU per event, class task with ${RESOURCES} resources (p50)`, target: `≤ ${CPU_TARGET_MS.class} ms`, actual: ms(cc.p50), met: cc.p50 <= CPU_TARGET_MS.class },
    { id: "lean.rss", what: `Daemon RSS, 3 ModuleTasks after ${leanRuns} runs`, target: "≤ 80 MB", actual: `${bytes(rssModule.rss)} (3 class tasks: ${bytes(rssClass.rss)})`, met: rssModule.rss <= RSS_TARGET },
    { id: "lean.first-sync", what: "First sync of one task after a restart (spawn → applied, p50)", target: "≤ 1.0 s", actual: `${ms(sr.p50)} (fresh dir: ${ms(sf.p50)})`, met: sr.p50 <= FIRST_SYNC_TARGET_MS },
  ];
  const mainM = median(cpuModule.mainThread);
  const why: Record<string, string> = {
    "lean.cpu.module": `${ms(mainM)} of the ${ms(cm.p50)} is the main thread: forking tofu from a ${bytes(cpuModule.rss)} process, reading and logging Terraform's JSON lines, writing main.tf.json (temp file + rename) and the process-group record; the rest is V8's GC helpers. See the profile.`,
    "lean.cpu.class": `${ms(median(cpuClass.mainThread))} in the main thread, the rest in the synthesis worker (cdktf) and V8's GC helpers.`,
    "lean.rss": "cdktf, tsx and the config never load in the main thread any more (the worker that read the config has ended). What stays: Node itself (about 41 MB resident with a 1 MB young generation, most of it the node binary's own pages), the daemon's modules (HTTP API, logger, metrics, Consul client: about 24 MB), what the config-loading worker leaves in the allocator after it ends (a few MB), and the heap the runs grow (events, metrics, views).",
    "lean.first-sync": "Spawn → API listening is about 0.4 s (Node and the daemon's modules), then the config is read in the synthesis worker (tsx, the config) before the first run; the apply itself is ~0.1–0.3 s.",
  };
  for (const t of targets) if (t.met === false) t.why = why[t.id];
  return {
    title: "Lean daemon",
    method: `The real \`cts watch --no-buffer\` process as an installed cts runs it (dist/cli/main.js built by \`npm run build\`, with the node flags of its shebang; TypeScript config, warm providers on as by default, Consul state backend) against a Consul dev agent and OpenTofu. CPU is the daemon's own (the sum of /proc/<pid>/task/*/schedstat over its threads: main, synthesis worker, libuv and V8 helpers), never Terraform's or the providers'. ${leanChanges} measured changes per task kind; ${leanRuns} runs for RSS; ${leanStarts} restarts.`,
    tables: [cpu, mem, sync],
    targets,
    notes: [],
    data: {
      cpuModule: { ...cpuModule, perEvent: cpuModule.perEvent.map((x) => round(x, 2)), mainThread: cpuModule.mainThread.map((x) => round(x, 2)), latency: cpuModule.latency.map((x) => round(x)) },
      cpuClass: { ...cpuClass, perEvent: cpuClass.perEvent.map((x) => round(x, 2)), mainThread: cpuClass.mainThread.map((x) => round(x, 2)), latency: cpuClass.latency.map((x) => round(x)) },
      rssModule,
      rssClass,
      firstSync: { restart: starts.restart.map((x) => round(x)), fresh: starts.fresh.map((x) => round(x)) },
      medians: { cpuModuleMs: round(median(cpuModule.perEvent), 2), cpuClassMs: round(median(cpuClass.perEvent), 2) },
    },
  };
};

/**
 * The profile workload: 30 changes to the ModuleTask after its warm-up (the profile window covers
 * only those: one daemon, so no start-up inside it). LEAN_PROFILE_CHANGES / LEAN_PROFILE_KINDS
 * (e.g. "class" or "module,class") change it when profiling by hand.
 */
export const profile: BenchFn = async (ctx) => {
  buildPackage();
  const consul = await startConsul();
  ctx.onCleanup(() => consul.stop());
  const n = Number(process.env.LEAN_PROFILE_CHANGES ?? 30);
  const kinds = (process.env.LEAN_PROFILE_KINDS ?? "module").split(",") as Kind[];
  for (const kind of kinds) await perEventCpu(ctx, consul, kind, n);
  ctx.window.end();
  return { title: "Lean daemon", method: `lean-daemon profile workload: ${n} changes to ${kinds.map((k) => (k === "module" ? "a ModuleTask" : "a class task with 10 resources")).join(", then ")} (the daemon under --cpu-prof)`, tables: [], targets: [], notes: [], data: {} };
};
