/**
 * 5. Scale and memory: the real `cts watch` process with 10,000 services × 3 instances in the
 * catalog and tasks watching them by names, by regexp (all of them) and by catalog-services; its
 * RSS and CPU at start, at idle and under a little churn. Then RSS across 2,000 consecutive
 * syntheses through the daemon's worker synthesizer (each synthesis's cdktf tokens forgotten after
 * it; replaced only past a heap growth over its baseline), against the same in process.
 */
import { readdirSync, statSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { startConsul } from "../test/support/consul.ts";
import { registerInstances, type CatalogInstance } from "./lib/catalog.ts";
import { lit, writeBenchConfig } from "./lib/config.ts";
import { buildPackage, startDaemonProcess } from "./lib/daemon-process.ts";
import { socketCount } from "./lib/machine.ts";
import { summarizeHeapSnapshot } from "./lib/heap.ts";
import { synthMemory } from "./lib/synth-memory.ts";
import { bytes, median, ms, sleep } from "./lib/stats.ts";
import type { BenchContext, BenchFn, ResultTable, TargetCheck } from "./lib/types.ts";

const RSS_TARGET = 300 * 1024 * 1024;
/** "Near zero": under 1% of one core in the median 5 s idle window. */
const IDLE_CPU_TARGET = 0.01;
/** "Flat": RSS after the last synthesis within 15% of RSS after the first 100. */
const FLAT_TOLERANCE = 0.15;
/** Seconds after the first runs before "idle" starts (its CPU is reported separately). */
const SETTLE_SECONDS = 10;
const IDLE_WINDOW_S = 5;
const MB = 1024 * 1024;

const pct = (x: number) => `${(x * 100).toFixed(2)}%`;
const svc = (i: number) => `svc-${String(i).padStart(5, "0")}`;

interface CatalogScale {
  services: number;
  instances: number;
  registerMs: number;
  /** Open sockets of the daemon (blocking queries, keep-alive, API listener). */
  sockets: number;
  startMs: number;
  peakRss: number;
  rssAfterStart: number;
  /** Median CPU of the 5 s idle windows. */
  idleCpu: number;
  /** CPU over the whole idle time, and the busiest 5 s window. */
  idleMeanCpu: number;
  idleMaxCpu: number;
  /** CPU in the settle window right after the first runs. */
  settleCpu: number;
  idleRss: number;
  idleSeconds: number;
  churnLatencyMs: number[];
  rssAfterChurn: number;
  churnCpu: number;
  consulConnLimit: number;
  /** RSS of the daemon with one small task. */
  baselineRss: number;
  heap?: ReturnType<typeof summarizeHeapSnapshot>;
}

/** RSS of `cts watch` with one task on one service: what the daemon costs before it watches much. */
async function baselineRss(ctx: BenchContext, consulAddress: string, register: (svc: Record<string, unknown>) => Promise<void>): Promise<number> {
  await register({ Name: "base", ID: "base-1", Address: "10.0.0.1", Port: 80 });
  const dir = join(ctx.tmp, "baseline");
  await mkdir(dir, { recursive: true });
  const file = await writeBenchConfig({
    dir,
    consulAddress,
    backend: { local: { path: join(dir, "terraform.tfstate") } },
    tasks: [`new MemberFile({ name: "base", path: ${lit(join(dir, "base.txt"))}, condition: services({ names: ["base"] }) })`],
  });
  const d = startDaemonProcess(file, { nodeArgs: ["--heapsnapshot-signal=SIGUSR2"], cwd: dir, built: true });
  try {
    await d.waitForLine(/task 'base': (applied|failed)/, 120_000, { seen: true });
    await sleep(3_000);
    return d.sample().rssBytes;
  } finally {
    await d.stop();
  }
}

/** Asks the daemon for a heap snapshot (--heapsnapshot-signal) and summarizes it. */
async function heapOf(d: ReturnType<typeof startDaemonProcess>, dir: string): Promise<ReturnType<typeof summarizeHeapSnapshot> | undefined> {
  d.signal("SIGUSR2");
  const end = Date.now() + 180_000;
  let last = -1;
  while (Date.now() < end) {
    await sleep(2_000);
    const f = readdirSync(dir).find((x) => x.endsWith(".heapsnapshot"));
    if (!f) continue;
    const size = statSync(join(dir, f)).size;
    if (size > 0 && size === last) return summarizeHeapSnapshot(join(dir, f));
    last = size;
  }
  return undefined;
}

async function catalogScale(ctx: BenchContext, services: number, perService: number, idleSeconds: number, churn: number, opts: { heapIfAbove?: number } = {}): Promise<CatalogScale> {
  // One blocking query per watched service: raise Consul's per-client connection cap (default
  // 200) above the number of views, as a CTS deployment watching this many services must.
  const consulConnLimit = services + 1000;
  const consul = await startConsul({ extraConfig: `limits {\n  http_max_conns_per_client = ${consulConnLimit}\n}\n` });
  ctx.onCleanup(() => consul.stop());
  const nodes = Math.max(1, Math.min(500, Math.ceil((services * perService) / 60)));
  const instances: CatalogInstance[] = [];
  for (let s = 0; s < services; s++)
    for (let k = 0; k < perService; k++) {
      const n = (s * perService + k) % nodes;
      instances.push({ node: `scale-node-${n}`, service: svc(s), id: `${svc(s)}-${k}`, address: `10.${(n >> 8) & 255}.${n & 255}.${k + 1}`, port: 8000 + k, tags: ["scale"], meta: { k: String(k) } });
    }
  ctx.log(`registering ${instances.length} instances (${services} services) through /v1/txn…`);
  const baseline = await baselineRss(ctx, consul.address, (svc) => consul.register(svc));
  ctx.log(`baseline: cts watch with one small task: RSS ${bytes(baseline)}`);
  const registerMs = await registerInstances(consul, instances, 4);
  ctx.log(`registered in ${ms(registerMs)} (${Math.round(instances.length / (registerMs / 1000))}/s)`);

  const dir = join(ctx.tmp, "daemon");
  await mkdir(dir, { recursive: true });
  const names = Array.from({ length: Math.min(50, services) }, (_, i) => svc(i));
  const file = await writeBenchConfig({
    dir,
    consulAddress: consul.address,
    backend: { local: { path: join(dir, "terraform.tfstate") } },
    extra: "concurrency: 4,",
    tasks: [
      `new MemberFile({ name: "scale-names", path: ${lit(join(dir, "names.txt"))}, condition: services({ names: ${lit(names)} }) })`,
      `new MemberFile({ name: "scale-regexp", path: ${lit(join(dir, "regexp.txt"))}, condition: services({ regexp: "^svc-" }), digest: true })`,
      `new CatalogFile({ name: "scale-catalog", path: ${lit(join(dir, "catalog.txt"))}, condition: catalogServices({ regexp: "" }), digest: true })`,
    ],
  });
  ctx.window.begin();
  const t0 = performance.now();
  const d = startDaemonProcess(file, { nodeArgs: ["--heapsnapshot-signal=SIGUSR2"], cwd: dir, built: true });
  ctx.onCleanup(() => d.stop());
  let peak = 0;
  const sampler = setInterval(() => {
    try {
      peak = Math.max(peak, d.sample().rssBytes);
    } catch {
      /* exited */
    }
  }, 250);
  try {
    const done = (t: string) => d.waitForLine(new RegExp(`task '${t}': (applied|failed|no-op)`), 20 * 60_000, { seen: true });
    const ends = await Promise.all(["scale-names", "scale-regexp", "scale-catalog"].map(done));
    const failed = ends.filter((e) => / failed/.test(e.line));
    if (failed.length) throw new Error(`first runs failed: ${failed.map((f) => f.line).join(" | ")}`);
    const startMs = Math.max(...ends.map((e) => e.t)) - t0;
    ctx.log(`daemon: first runs done after ${ms(startMs)}; settling for ${SETTLE_SECONDS} s`);
    // The settle window is measured too: the garbage of start-up is collected here.
    const s0 = d.sample();
    const ts0 = performance.now();
    await sleep(SETTLE_SECONDS * 1000);
    const afterStart = d.sample();
    const settleCpu = (afterStart.cpuSec - s0.cpuSec) / ((performance.now() - ts0) / 1000);
    const sockets = socketCount(d.pid);

    // Idle, in 5 s windows: about a minute after start-up V8's memory reducer runs one large
    // compacting GC (seconds of CPU, RSS drops by a third); the median window is the steady state.
    ctx.log(`idle for ${idleSeconds} s`);
    const i0 = d.sample();
    const ti0 = performance.now();
    const windows: number[] = [];
    let prev = i0;
    for (let w = 0; w < Math.max(1, Math.round(idleSeconds / IDLE_WINDOW_S)); w++) {
      const tw0 = performance.now();
      await sleep(IDLE_WINDOW_S * 1000);
      const cur = d.sample();
      windows.push((cur.cpuSec - prev.cpuSec) / ((performance.now() - tw0) / 1000));
      prev = cur;
    }
    const i1 = prev;
    const idleMeanCpu = (i1.cpuSec - i0.cpuSec) / ((performance.now() - ti0) / 1000);
    const idleCpu = median(windows);
    const idleMaxCpu = Math.max(...windows);

    // Churn: a new instance of a service only the regexp task watches; time until its apply.
    const churnLatencyMs: number[] = [];
    const c0 = d.sample();
    const tc0 = performance.now();
    const target = svc(Math.min(services - 1, 5000));
    for (let i = 0; i < churn; i++) {
      const applied = d.waitForLine(/task 'scale-regexp': (applied|failed)/, 120_000);
      const tw = performance.now();
      if (i % 2 === 0) await consul.register({ Name: target, ID: `churn-${i}`, Address: "10.250.0.1", Port: 9000 + i });
      else await consul.deregister(`churn-${i - 1}`);
      const a = await applied;
      churnLatencyMs.push(a.t - tw);
      await sleep(300);
    }
    const c1 = d.sample();
    const churnCpu = (c1.cpuSec - c0.cpuSec) / ((performance.now() - tc0) / 1000);
    clearInterval(sampler);
    const peakRss = Math.max(peak, c1.peakRssBytes);
    ctx.window.end();
    // Over the RSS target: a heap snapshot of the daemon shows where its JS memory goes.
    let heap: CatalogScale["heap"];
    if (opts.heapIfAbove !== undefined && afterStart.rssBytes >= opts.heapIfAbove) {
      ctx.log("taking a heap snapshot of the daemon");
      heap = await heapOf(d, dir);
    }
    return {
      services,
      instances: instances.length,
      registerMs,
      sockets,
      startMs,
      peakRss,
      rssAfterStart: afterStart.rssBytes,
      idleCpu,
      idleMeanCpu,
      idleMaxCpu,
      settleCpu,
      idleRss: i1.rssBytes,
      idleSeconds,
      churnLatencyMs,
      rssAfterChurn: c1.rssBytes,
      churnCpu,
      consulConnLimit,
      baselineRss: baseline,
      ...(heap ? { heap } : {}),
    };
  } finally {
    clearInterval(sampler);
    await d.stop();
  }
}

export const run: BenchFn = async (ctx) => {
  const { scaleServices, scaleInstances, scaleIdleSeconds, syntheses, synthesesInProcess } = ctx.sizes;
  // The daemon runs as installed (dist/, the shebang's node flags), not from the sources under tsx.
  buildPackage();
  // Syntheses first, while this process is fresh (the heap snapshot parsed later inflates it).
  const sm = await synthMemory(ctx, syntheses, synthesesInProcess);
  const cs = await catalogScale(ctx, scaleServices, scaleInstances, scaleIdleSeconds, 6, { heapIfAbove: RSS_TARGET });

  const scale: ResultTable = {
    title: `The \`cts watch\` process with ${cs.instances.toLocaleString("en")} instances (${cs.services.toLocaleString("en")} services × ${scaleInstances})`,
    columns: ["Measure", "Value"],
    rows: [
      ["Registering the instances (PUT /v1/txn, 128 per transaction, 4 in flight)", `${ms(cs.registerMs)} (${Math.round(cs.instances / (cs.registerMs / 1000)).toLocaleString("en")} instances/s)`],
      ["Open sockets of the daemon (one per blocking query, plus the API and Terraform pipes)", `${cs.sockets} (distinct queries: ${cs.services} health + 1 catalog)`],
      ["Start → first runs of all three tasks applied", ms(cs.startMs)],
      ["RSS of `cts watch` with one task on one service (the fixed cost: Node and the daemon's modules in the main thread; cdktf, the task classes and the config in the synthesis worker)", bytes(cs.baselineRss)],
      ["Peak RSS (start-up included)", bytes(cs.peakRss)],
      [`CPU in the ${SETTLE_SECONDS} s after the first runs (start-up garbage being collected)`, `${(cs.settleCpu * 100).toFixed(2)}% of one core`],
      [`RSS ${SETTLE_SECONDS} s after the first runs`, bytes(cs.rssAfterStart)],
      [`CPU over the ${cs.idleSeconds} s of idle after that: median 5 s window / mean / busiest window`, `${pct(cs.idleCpu)} / ${pct(cs.idleMeanCpu)} / ${pct(cs.idleMaxCpu)} of one core`],
      [`RSS after ${cs.idleSeconds} s idle (steady state)`, bytes(cs.idleRss)],
      [`Regexp task (${cs.instances.toLocaleString("en")} instances): write → apply finished, median of ${cs.churnLatencyMs.length}`, ms(median(cs.churnLatencyMs))],
      ["CPU during that churn", `${(cs.churnCpu * 100).toFixed(0)}% of one core`],
      ["RSS after the churn", bytes(cs.rssAfterChurn)],
    ],
    notes: [
      `Tasks: MemberFile on 50 named services, MemberFile on regexp \`^svc-\` (every service, so one health query per service), CatalogFile on catalog-services; the last two write a digest of their text (OpenTofu takes ~17 s to apply one 124 KB string attribute and minutes for 1.3 MB, which would measure Terraform rather than cts). Consul's http_max_conns_per_client was raised to ${cs.consulConnLimit}: with one blocking query per watched service, the default of 200 refuses the daemon's connections (CTS deployments need the same setting). State backend: local (a 30,000-line file is larger than a Consul KV value may be).`,
    ],
  };
  const w0 = sm.worker[0]?.rss ?? NaN;
  const wN = sm.worker.at(-1)?.rss ?? NaN;
  const wMax = Math.max(...sm.worker.map((x) => x.rss));
  const i0 = sm.inProcess[0]!.rss;
  const iN = sm.inProcess.at(-1)!.rss;
  const perHundred = ((iN - i0) / Math.max(1, sm.inProcess.at(-1)!.n)) * 100;
  const memory: ResultTable = {
    title: `RSS across consecutive syntheses (ChainedFiles: ${sm.resources} local_files, each referencing the previous one)`,
    columns: ["Synthesizer", "Syntheses", "RSS after 100", "RSS at the end", "max", "growth"],
    rows: [
      ["worker thread (the daemon's)", sm.worker.at(-1)?.n ?? 0, bytes(w0), bytes(wN), bytes(wMax), `${(((wN - w0) / w0) * 100).toFixed(1)}% (${sm.recycled} recycles)`],
      ["in process (cts synth, once; the first 50 load cdktf)", sm.inProcess.at(-1)!.n, bytes(sm.inProcess.find((x) => x.n === 100)?.rss ?? NaN), bytes(iN), bytes(Math.max(...sm.inProcess.map((x) => x.rss))), `${bytes(perHundred)} per 100 syntheses`],
    ],
    notes: ["RSS of the whole benchmark process (the worker thread included), after a forced GC on the main thread."],
  };
  const flat = wN <= w0 * (1 + FLAT_TOLERANCE);
  const full = cs.instances >= 30_000;
  const targets: TargetCheck[] = [
    {
      id: "scale.rss",
      what: `Daemon RSS with ${cs.instances.toLocaleString("en")} instances watched (steady state after ${cs.idleSeconds} s idle; ${SETTLE_SECONDS} s after start-up and peak in brackets)`,
      target: "< 300 MB",
      actual: `${bytes(cs.idleRss)} (${bytes(cs.rssAfterStart)}, peak ${bytes(cs.peakRss)})`,
      met: full ? cs.idleRss < RSS_TARGET : null,
    },
    {
      id: "scale.idle-cpu",
      what: `Daemon CPU at idle with ${cs.instances.toLocaleString("en")} instances watched (median 5 s window over ${cs.idleSeconds} s; mean in brackets)`,
      target: "near zero (< 1% of a core)",
      actual: `${pct(cs.idleCpu)} (${pct(cs.idleMeanCpu)})`,
      met: cs.idleCpu < IDLE_CPU_TARGET,
    },
    {
      id: "scale.flat",
      what: `RSS after ${sm.worker.at(-1)?.n ?? 0} syntheses against after 100 (the daemon's worker)`,
      target: `flat (within ${FLAT_TOLERANCE * 100}%)`,
      actual: `${bytes(w0)} → ${bytes(wN)}`,
      met: (sm.worker.at(-1)?.n ?? 0) >= 2000 ? flat : null,
    },
  ];
  if (full && cs.idleRss >= RSS_TARGET)
    targets[0]!.why = `${bytes(cs.baselineRss)} is the fixed cost of the daemon with one small task class (Node and the daemon's modules on the main thread; cdktf, the provider bindings and the config in the synthesis worker, which stays for 2 minutes after a synthesis). The other ${bytes(cs.idleRss - cs.baselineRss)} is ≈ ${Math.round((cs.idleRss - cs.baselineRss) / (cs.services + 1) / 1024)} KB per watched service: one blocking query per service means ${cs.sockets.toLocaleString("en")} open sockets, each with its ClientRequest, socket, parser, timers and promise chain, and every view's data with its digest. The heap snapshot below breaks the JS part down.`;
  const tables = [scale, memory];
  if (cs.heap) tables.push({ ...cs.heap.table, title: `Heap of the daemon after start-up, idle and churn with ${cs.instances.toLocaleString("en")} instances (${bytes(cs.heap.totalBytes)} of JS objects; heap snapshot, self sizes)` });
  if (cs.idleCpu >= IDLE_CPU_TARGET)
    targets[1]!.why = `Nothing of cts is scheduled at idle (${cs.services + 1} blocking queries wait up to 5 minutes each; the agent checks the API every 10 s); the busy windows are V8 collecting start-up garbage (RSS ${bytes(cs.rssAfterStart)} → ${bytes(cs.idleRss)}).`;
  if (!flat) targets[2]!.why = "RSS grew over the syntheses: something a synthesis makes outlives it (cdktf's tokens are forgotten after each one).";
  return {
    title: "Scale and memory",
    method: `The real \`cts watch --no-buffer\` process as installed (dist/cli/main.js with its shebang's node flags, real OpenTofu) with ${cs.services.toLocaleString("en")} services × ${scaleInstances} instances registered; RSS and CPU from /proc/<pid>. Then ${syntheses} syntheses through workerSynthesizer() with its defaults, RSS sampled every 100, against ${synthesesInProcess} syntheses on the main thread.`,
    tables,
    targets,
    notes: [],
    data: {
      catalog: { ...cs, heap: cs.heap ? { totalBytes: cs.heap.totalBytes, top: cs.heap.table.rows } : undefined, churnLatencyMs: cs.churnLatencyMs.map((x) => Math.round(x)), registerMs: Math.round(cs.registerMs), startMs: Math.round(cs.startMs), idleCpu: Math.round(cs.idleCpu * 10000) / 10000, idleMeanCpu: Math.round(cs.idleMeanCpu * 10000) / 10000, idleMaxCpu: Math.round(cs.idleMaxCpu * 10000) / 10000, settleCpu: Math.round(cs.settleCpu * 10000) / 10000, churnCpu: Math.round(cs.churnCpu * 1000) / 1000 },
      syntheses: { worker: sm.worker.map((x) => ({ n: x.n, rssMB: Math.round((x.rss / MB) * 10) / 10 })), recycled: sm.recycled, inProcess: sm.inProcess.map((x) => ({ n: x.n, rssMB: Math.round((x.rss / MB) * 10) / 10 })) },
    },
  };
};

