/**
 * 6. Consul load: requests per second Consul receives from cts at idle and under churn, counted by
 * an HTTP proxy in front of the agent; open blocking queries against distinct queries and tasks.
 * The daemon runs in-process as `cts watch --no-buffer` (recording driver: Terraform's own state
 * traffic is not the watcher's and is left out).
 */
import { join } from "node:path";
import { startConsul } from "../test/support/consul.ts";
import { startCountingProxy } from "../test/support/counting-proxy.ts";
import { lit, writeBenchConfig } from "./lib/config.ts";
import { startBenchDaemon } from "./lib/daemon.ts";
import { sleep } from "./lib/stats.ts";
import type { BenchContext, BenchFn, ResultTable, TargetCheck } from "./lib/types.ts";

/** Task shapes, cycled: which Consul queries each one needs. */
const SHAPES = [
  { kind: "names web", cond: `services({ names: ["web"] })`, queries: ["health:web"] },
  { kind: "names web", cond: `services({ names: ["web"] })`, queries: ["health:web"] },
  { kind: "names web", cond: `services({ names: ["web"] })`, queries: ["health:web"] },
  { kind: "names web", cond: `services({ names: ["web"] })`, queries: ["health:web"] },
  { kind: "names web, api", cond: `services({ names: ["web", "api"] })`, queries: ["health:web", "health:api"] },
  { kind: "names web, api", cond: `services({ names: ["web", "api"] })`, queries: ["health:web", "health:api"] },
  { kind: "names web, api", cond: `services({ names: ["web", "api"] })`, queries: ["health:web", "health:api"] },
  { kind: "regexp ^(web|api)$", cond: `services({ regexp: "^(web|api)$" })`, queries: ["catalog", "health:web", "health:api"] },
  { kind: "catalog-services", cond: `catalogServices({ regexp: "" })`, queries: ["catalog"] },
  { kind: "names db", cond: `services({ names: ["db"] })`, queries: ["health:db"] },
];
const WATCHED = ["/v1/health/service/web", "/v1/health/service/api", "/v1/health/service/db", "/v1/catalog/services"];

async function bench(ctx: BenchContext, tasks: number, idleSeconds: number, churnSeconds: number, perSecond: number) {
  const consul = await startConsul();
  ctx.onCleanup(() => consul.stop());
  const proxy = await startCountingProxy(consul.url);
  ctx.onCleanup(() => proxy.stop());
  for (let i = 1; i <= 3; i++) await consul.register({ Name: "web", ID: `web-${i}`, Address: `10.1.0.${i}`, Port: 80 });
  for (let i = 1; i <= 3; i++) await consul.register({ Name: "api", ID: `api-${i}`, Address: `10.2.0.${i}`, Port: 8080 });
  for (let i = 1; i <= 2; i++) await consul.register({ Name: "db", ID: `db-${i}`, Address: `10.3.0.${i}`, Port: 5432 });
  const shapes = Array.from({ length: tasks }, (_, i) => SHAPES[i % SHAPES.length]!);
  const file = await writeBenchConfig({
    dir: ctx.tmp,
    consulAddress: proxy.address,
    tasks: shapes.map((s, i) => {
      const name = `load-${String(i).padStart(3, "0")}`;
      return s.kind === "catalog-services"
        ? `new CatalogFile({ name: ${lit(name)}, path: ${lit(join(ctx.tmp, name))}, condition: ${s.cond} })`
        : `new MemberFile({ name: ${lit(name)}, path: ${lit(join(ctx.tmp, name))}, condition: ${s.cond} })`;
    }),
  });
  const d = await startBenchDaemon(file, { driver: "fake" });
  ctx.onCleanup(() => d.close());
  const names = shapes.map((_, i) => `load-${String(i).padStart(3, "0")}`);
  const end = Date.now() + 60_000;
  while (names.some((n) => d.controller.events.list(n).length === 0)) {
    if (Date.now() > end) throw new Error(`first runs did not finish: ${d.problems.join("; ")}`);
    await sleep(50);
  }
  await d.controller.idle();
  await sleep(2_000);

  // Idle.
  ctx.window.begin();
  proxy.reset();
  const inFlight = Object.fromEntries(WATCHED.map((p) => [p, proxy.inFlight(p)]));
  const openQueries = Object.values(inFlight).reduce((a, b) => a + b, 0);
  const views = d.watcher.viewKeys().length;
  const perTask = shapes.reduce((a, s) => a + s.queries.length, 0);
  const ti = performance.now();
  await sleep(idleSeconds * 1000);
  const idleRequests = proxy.requests().length;
  const idleRps = idleRequests / ((performance.now() - ti) / 1000);

  // Churn: register / deregister an instance of web, `perSecond` writes a second.
  proxy.reset();
  const writes = Math.round(churnSeconds * perSecond);
  const tc = performance.now();
  for (let i = 0; i < writes; i++) {
    const due = tc + (i * 1000) / perSecond;
    const wait = due - performance.now();
    if (wait > 0) await sleep(wait);
    if (i % 2 === 0) await consul.register({ Name: "web", ID: "web-churn", Address: "10.1.9.9", Port: 81 + (i % 7) });
    else await consul.deregister("web-churn");
  }
  await sleep(500);
  const churnMs = performance.now() - tc;
  const seen = proxy.requests().filter((r) => WATCHED.includes(r.path) || r.path.startsWith("/v1/"));
  const byPath = new Map<string, number>();
  for (const r of seen) byPath.set(r.path, (byPath.get(r.path) ?? 0) + 1);
  ctx.window.end();
  await d.controller.idle();
  return { tasks, views, openQueries, inFlight, perTask, idleRequests, idleRps, idleSeconds, writes, churnMs, churnRequests: seen.length, byPath: Object.fromEntries(byPath), problems: d.problems };
}

export const run: BenchFn = async (ctx) => {
  const r = await bench(ctx, ctx.sizes.loadTasks, ctx.sizes.loadIdleSeconds, ctx.sizes.loadChurnSeconds, ctx.sizes.loadChurnPerSecond);
  const churnRps = r.churnRequests / (r.churnMs / 1000);
  const t: ResultTable = {
    title: `${r.tasks} tasks watching web, api, db and the catalog`,
    columns: ["Measure", "Value"],
    rows: [
      ["Tasks", r.tasks],
      ["Distinct queries (the watcher's views)", r.views],
      ["Blocking queries open at Consul (proxy: requests in flight)", `${r.openQueries} (${Object.entries(r.inFlight).map(([p, n]) => `${p.replace("/v1/", "")}: ${n}`).join(", ")})`],
      ["Blocking queries if every task watched on its own", r.perTask],
      [`Idle: requests to Consul over ${r.idleSeconds} s`, `${r.idleRequests} (${r.idleRps.toFixed(2)} req/s)`],
      [`Churn: ${r.writes} writes to web over ${(r.churnMs / 1000).toFixed(1)} s`, `${r.churnRequests} requests (${churnRps.toFixed(1)} req/s, ${(r.churnRequests / r.writes).toFixed(2)} per write)`],
      ["… by path", Object.entries(r.byPath).map(([p, n]) => `${p.replace("/v1/", "")}: ${n}`).join(", ")],
    ],
    notes: [
      "Each view waits at least 100 ms (+ up to 20 ms jitter) between fetches, as CTS does, so a burst of writes to one service costs at most about 8 requests a second for that service, whatever the number of tasks. An instance registration also wakes the catalog-services view (Consul bumps the services index), which answers with identical data and triggers nothing.",
      "Idle blocking queries are re-issued when Consul's 5-minute wait ends (plus up to wait/16 of jitter): about one request per view every 5 minutes.",
    ],
  };
  const targets: TargetCheck[] = [
    {
      id: "load.queries",
      what: "Open blocking queries equal distinct queries, not tasks",
      target: `${r.views} (distinct queries), not ${r.tasks} tasks / ${r.perTask} per-task queries`,
      actual: `${r.openQueries} open`,
      met: r.openQueries === r.views,
    },
  ];
  if (r.openQueries !== r.views) targets[0]!.why = `The proxy saw ${r.openQueries} requests in flight for ${r.views} views.`;
  return {
    title: "Consul load",
    method: `The daemon (in-process, recording driver) talks to Consul through a counting HTTP proxy. ${r.tasks} tasks of five shapes (names web; names web+api; regexp ^(web|api)$; catalog-services; names db) share 4 distinct queries. Idle: ${r.idleSeconds} s with no writes. Churn: ${ctx.sizes.loadChurnPerSecond} writes a second (register/deregister one web instance) for ${ctx.sizes.loadChurnSeconds} s.`,
    tables: [t],
    targets,
    notes: r.problems.length ? [`Daemon warnings: ${r.problems.slice(0, 3).join(" | ")}`] : [],
    data: { ...r, churnRps: Math.round(churnRps * 100) / 100, idleRps: Math.round(r.idleRps * 1000) / 1000, churnMs: Math.round(r.churnMs) },
  };
};
