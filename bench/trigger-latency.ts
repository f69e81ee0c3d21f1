/**
 * 1. Trigger latency: a Consul write (register, deregister, health change) → the task synthesized
 * and handed to the driver, buffer off. The daemon runs in-process exactly as `cts watch
 * --no-buffer` wires it (real client, shared blocking queries, recycled worker synthesizer); only
 * the driver is a recorder, because this benchmark ends at the hand-off.
 */
import { join } from "node:path";
import { startConsul, type ConsulAgent } from "../test/support/consul.ts";
import { instancesOf, registerInstances } from "./lib/catalog.ts";
import { lit, writeBenchConfig } from "./lib/config.ts";
import { startBenchDaemon, type BenchDaemon } from "./lib/daemon.ts";
import { median, ms, rounded, sleep, summarize } from "./lib/stats.ts";
import type { BenchContext, BenchFn, ResultTable, TargetCheck } from "./lib/types.ts";

interface Sample {
  kind: string;
  /** Write issued → driver has the JSON. */
  total: number;
  /** The PUT itself (Consul's Raft write and answer). */
  write: number;
  /** Write issued → synthesis starts (Consul wakes the blocking query, fetch, convert, compare, queue). */
  toSynth: number;
  /** Synthesis in the worker, including the trip to the worker and back. */
  synth: number;
  /** Synthesis done → driver called (hash compare, bookkeeping). */
  afterSynth: number;
}

const P50_TARGET = 50;
const P99_TARGET = 250;
const serviceOf = (n: number) => `web-n${n}`;
const taskOf = (n: number) => `lat-${n}`;

async function measure(d: BenchDaemon, task: string, kind: string, write: () => Promise<unknown>, pred: (json: string) => boolean, out: Sample[]): Promise<void> {
  // Let the view go back to blocking (it waits 100 ms + up to 20 ms between fetches).
  await sleep(150 + Math.random() * 100);
  const next = d.rec.next(task, "handoff", (m) => pred(m.json ?? ""), 15_000);
  const t0 = performance.now();
  await write();
  const tw = performance.now();
  const m = await next;
  const s = m.synth ?? { start: NaN, end: NaN };
  out.push({ kind, total: m.t - t0, write: tw - t0, toSynth: s.start - t0, synth: s.end - s.start, afterSynth: m.t - s.end });
}

async function waitInitialRuns(d: BenchDaemon, tasks: string[], timeoutMs: number): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (tasks.some((t) => d.controller.events.list(t).length === 0)) {
    if (Date.now() > end) throw new Error(`the first runs did not finish within ${timeoutMs / 1000} s: ${d.problems.join("; ")}`);
    await sleep(50);
  }
}

async function setup(ctx: BenchContext, sizes: number[]) {
  const consul = await startConsul();
  ctx.onCleanup(() => consul.stop());
  for (const n of sizes) {
    // n-1 instances straight into the catalog, plus one agent-registered probe with a TTL check
    // whose status the benchmark flips.
    if (n > 1) await registerInstances(consul, instancesOf(serviceOf(n), n - 1, { nodes: Math.min(50, n - 1) }));
    await consul.register({ Name: serviceOf(n), ID: `probe-n${n}`, Address: "10.9.9.9", Port: 9000, Check: { CheckID: `probe-n${n}-ttl`, TTL: "10m", Status: "passing" } });
  }
  await consul.register({ Name: "fresh-base", ID: "fresh-base-1", Address: "10.8.8.8", Port: 8000 });
  const tasks = [
    ...sizes.map((n) => `new MemberFile({ name: ${lit(taskOf(n))}, path: ${lit(join(ctx.tmp, `${n}.txt`))}, condition: services({ names: [${lit(serviceOf(n))}] }) })`),
    `new MemberFile({ name: "lat-regexp", path: ${lit(join(ctx.tmp, "regexp.txt"))}, condition: services({ regexp: "^fresh-" }) })`,
  ];
  const file = await writeBenchConfig({ dir: ctx.tmp, consulAddress: consul.address, tasks });
  const d = await startBenchDaemon(file, { driver: "fake" });
  ctx.onCleanup(() => d.close());
  await waitInitialRuns(d, [...sizes.map(taskOf), "lat-regexp"], 60_000);
  return { consul, d };
}

async function sampleSize(consul: ConsulAgent, d: BenchDaemon, n: number, iterations: number): Promise<Sample[]> {
  const out: Sample[] = [];
  const task = taskOf(n);
  const svc = serviceOf(n);
  const probe = `probe-n${n}`;
  const has = (id: string) => (json: string) => json.includes(` ${id} `);
  for (let i = 0; i < iterations; i++) {
    const id = `${svc}-x${i}`;
    await measure(d, task, "register", () => consul.register({ Name: svc, ID: id, Address: "10.7.7.7", Port: 7000 + i }), has(id), out);
    await measure(d, task, "health change", () => consul.api("PUT", `/v1/agent/check/fail/${probe}-ttl`), (j) => !has(probe)(j), out);
    await measure(d, task, "health change", () => consul.api("PUT", `/v1/agent/check/pass/${probe}-ttl`), has(probe), out);
    await measure(d, task, "deregister", () => consul.deregister(id), (j) => !has(id)(j), out);
  }
  return out;
}

async function sampleRegexp(consul: ConsulAgent, d: BenchDaemon, iterations: number): Promise<Sample[]> {
  const out: Sample[] = [];
  const line = (name: string) => (json: string) => json.includes(`${name} ${name}-1 `);
  for (let i = 0; i < iterations; i++) {
    const name = `fresh-${i}`;
    await measure(d, "lat-regexp", "new service", () => consul.register({ Name: name, ID: `${name}-1`, Address: "10.6.6.6", Port: 6000 + i }), line(name), out);
    await measure(d, "lat-regexp", "service gone", () => consul.deregister(`${name}-1`), (j) => !line(name)(j), out);
  }
  return out;
}

function row(label: string, kind: string, list: Sample[]): Array<string | number> {
  const s = summarize(list.map((x) => x.total));
  return [label, kind, s.n, ms(s.p50), ms(s.p95), ms(s.p99), ms(s.max)];
}

function breakdown(label: string, list: Sample[]): Array<string | number> {
  return [label, ms(median(list.map((x) => x.write))), ms(median(list.map((x) => x.toSynth))), ms(median(list.map((x) => x.synth))), ms(median(list.map((x) => x.afterSynth))), ms(median(list.map((x) => x.total)))];
}

/** How long Consul alone takes to answer the service's health query (a plain GET, body read, no parsing). */
async function consulFloor(consul: ConsulAgent, n: number, times = 15): Promise<number> {
  const out: number[] = [];
  for (let i = 0; i < times; i++) {
    const t0 = performance.now();
    const res = await fetch(`${consul.url}/v1/health/service/${serviceOf(n)}?passing=1`);
    await res.arrayBuffer();
    out.push(performance.now() - t0);
  }
  return median(out);
}

async function bench(ctx: BenchContext, sizes: number[], iterations: number, withRegexp: boolean) {
  const { consul, d } = await setup(ctx, sizes);
  const floors = new Map<number, number>();
  for (const n of sizes) floors.set(n, await consulFloor(consul, n));
  ctx.window.begin();
  const bySize = new Map<number, Sample[]>();
  for (const n of sizes) {
    ctx.log(`${n} instance(s): ${iterations} rounds of register / fail / pass / deregister`);
    bySize.set(n, await sampleSize(consul, d, n, iterations));
  }
  let regexp: Sample[] = [];
  if (withRegexp) {
    ctx.log(`regexp condition: ${iterations} new services`);
    regexp = await sampleRegexp(consul, d, iterations);
  }
  ctx.window.end();
  return { bySize, regexp, floors, problems: d.problems };
}

export const run: BenchFn = async (ctx) => {
  const sizes = ctx.sizes.triggerSizes;
  const { bySize, regexp, floors, problems } = await bench(ctx, sizes, ctx.sizes.triggerSamples, true);
  const latency: ResultTable = { title: "Consul write → task synthesized and handed to the driver", columns: ["Instances", "Write", "n", "p50", "p95", "p99", "max"], rows: [] };
  const parts: ResultTable = {
    title: "Where the time goes (medians)",
    columns: ["Case", "PUT answered", "→ synthesis starts", "synthesis (worker)", "→ driver", "total", "Consul alone: plain GET of the service"],
    rows: [],
    notes: [
      "\"→ synthesis starts\" covers the PUT, Consul waking the blocking query and sending the whole service, JSON parsing, conversion, change detection and the work queue. The last column is a plain GET of /v1/health/service/<name>?passing=1 with the body read and not parsed: Consul's share, which no client can avoid.",
    ],
  };
  const data: Record<string, unknown> = {};
  for (const n of sizes) {
    const list = bySize.get(n)!;
    for (const kind of ["register", "deregister", "health change"]) latency.rows.push(row(String(n), kind, list.filter((x) => x.kind === kind)));
    latency.rows.push(row(String(n), "**all**", list));
    parts.rows.push([...breakdown(`${n} instance(s)`, list), ms(floors.get(n)!)]);
    data[`instances_${n}`] = {
      all: rounded(summarize(list.map((x) => x.total))),
      ...Object.fromEntries(["register", "deregister", "health change"].map((k) => [k.replace(" ", "_"), rounded(summarize(list.filter((x) => x.kind === k).map((x) => x.total)))])),
      consulPlainGetMs: floors.get(n),
      medians: { write: median(list.map((x) => x.write)), toSynth: median(list.map((x) => x.toSynth)), synth: median(list.map((x) => x.synth)), afterSynth: median(list.map((x) => x.afterSynth)) },
    };
  }
  for (const kind of ["new service", "service gone"]) latency.rows.push(row("regexp", kind, regexp.filter((x) => x.kind === kind)));
  parts.rows.push([...breakdown("regexp, new service", regexp.filter((x) => x.kind === "new service")), "–"]);
  data.regexp = Object.fromEntries(["new service", "service gone"].map((k) => [k.replace(" ", "_"), rounded(summarize(regexp.filter((x) => x.kind === k).map((x) => x.total)))]));

  const targets: TargetCheck[] = [];
  const big = Math.max(...sizes);
  const all = summarize(bySize.get(big)!.map((x) => x.total));
  const at = big === 1000 ? "1,000 instances" : `${big} instances (1,000 not run)`;
  targets.push({ id: "trigger.p50", what: `Trigger latency p50 at ${at}`, target: `≤ ${P50_TARGET} ms`, actual: ms(all.p50), met: big >= 1000 ? all.p50 <= P50_TARGET : null });
  targets.push({ id: "trigger.p99", what: `Trigger latency p99 at ${at}`, target: `≤ ${P99_TARGET} ms`, actual: ms(all.p99), met: big >= 1000 ? all.p99 <= P99_TARGET : null });
  const rx = summarize(regexp.filter((x) => x.kind === "new service").map((x) => x.total));
  targets.push({ id: "trigger.regexp", what: "Regexp condition picks up a new service, p50 / p99", target: `≤ ${P50_TARGET} ms / ≤ ${P99_TARGET} ms`, actual: `${ms(rx.p50)} / ${ms(rx.p99)}`, met: rx.p50 <= P50_TARGET && rx.p99 <= P99_TARGET });
  const bigParts = bySize.get(big)!;
  for (const t of targets.filter((t) => t.met === false)) {
    t.why = `At ${big} instances the median splits into ${ms(median(bigParts.map((x) => x.toSynth)))} until synthesis starts and ${ms(median(bigParts.map((x) => x.synth)))} of synthesis. Consul alone needs ${ms(floors.get(big)!)} to answer the service's health query (a plain GET; ~1 KB of JSON per instance), and cts then parses, converts and compares the whole answer; see the CPU profile below.`;
  }
  return {
    title: "Trigger latency",
    method: `A MemberFile task (one local_file listing every instance) watches one service with 1, 100 or 1,000 instances (n−1 registered through the catalog, one probe through the agent with a TTL check). Each round registers an extra instance through the agent, fails and passes the probe's TTL check, and deregisters the extra instance; the clock runs from the moment the HTTP write is issued until the driver receives JSON that shows the change. Buffer period off; between writes the benchmark waits 150–250 ms so every write meets an idle blocking query. The regexp case registers a service with a new name that matches \`^fresh-\`. ${ctx.sizes.triggerSamples} rounds per size. CTS published ≈ 2.5 s for a catalog change to re-rendered inputs.`,
    tables: [latency, parts],
    targets,
    notes: problems.length ? [`Daemon warnings: ${problems.slice(0, 3).join(" | ")}`] : [],
    data,
  };
};

/** The 1,000-instance case alone, for --cpu-prof. */
export const profile: BenchFn = async (ctx) => {
  const n = Math.max(...ctx.sizes.triggerSizes);
  await bench(ctx, [n], Math.min(10, ctx.sizes.triggerSamples), false);
  return { title: "trigger profile", method: `trigger latency at ${n} instances, ${Math.min(10, ctx.sizes.triggerSamples) * 4} writes`, tables: [], targets: [], notes: [], data: {} };
};
