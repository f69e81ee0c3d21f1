import type { Demo } from "./demo.ts";
import type { RunEvent } from "./daemon.ts";
import { waitForPool, type TrafficSample } from "./traffic.ts";

/** The tasks in examples/cts.config.ts. */
export const LB_TASK = "web-lb";
export const FIREWALL_TASK = "allow-list";

/** What one step changed and what the demo observed once the system had caught up. */
export interface StepReport {
  title: string;
  /** The `web` instances that pass their checks: exactly these must answer through nginx. */
  pool: string[];
  /** The batch of requests through nginx that matched the pool. */
  traffic: TrafficSample;
  /** Instance ids in the firewall's allow-list (allow-list.json). */
  allowList: string[];
  /** ms from the change until Consul reported it (undefined when the step does not wait for Consul). */
  consulMs?: number;
  /** ms from the change until traffic through nginx and the allow-list matched. */
  syncedMs: number;
  /** Runs of each task that started during the step, oldest first. */
  events: Record<string, RunEvent[]>;
  /** Where the events came from: the cts HTTP API, or the daemon's log when the API is not served. */
  eventsFrom: "api" | "log";
}

/** Registers the starting catalog: three `web` instances, a public `api`, an internal `db`. */
export async function prepareCatalog(demo: Demo): Promise<void> {
  for (const id of ["web-1", "web-2", "web-3"]) await demo.addWeb(id);
  // Not every service is a web instance or public: the firewall must list `api` (and nginx's `lb`), never `db`.
  await demo.registerService({ ID: "api-1", Name: "api", Address: "127.0.0.1", Port: 9090, Tags: ["public", "grpc"] });
  await demo.registerService({ ID: "db-1", Name: "db", Address: "127.0.0.1", Port: 5432, Tags: ["internal"] });
  await demo.waitForConsul(demo.healthyWeb());
}

/** Step 1: the daemon starts and runs every task once; nginx serves the three instances. */
export function initialSync(demo: Demo): Promise<StepReport> {
  return step(demo, "cts starts: every task runs once", { runs: { [LB_TASK]: 1, [FIREWALL_TASK]: 1 } }, async () => {
    demo.startDaemon();
  });
}

/** Step 2: an instance fails its health check; Consul marks it critical; it leaves the pool. */
export function failInstance(demo: Demo, id = "web-2"): Promise<StepReport> {
  return step(demo, `${id} starts failing its health check`, { runs: { [LB_TASK]: 1 }, consul: true }, async () => {
    demo.setHealthy(id, false);
  });
}

/** Step 3: a new instance registers; once its check passes, it joins the pool. */
export function joinInstance(demo: Demo, id = "web-4"): Promise<StepReport> {
  return step(demo, `a new instance ${id} registers and passes its check`, { runs: { [LB_TASK]: 1 }, consul: true }, async () => {
    await demo.addWeb(id);
  });
}

/** Step 4: a new service tagged `public` registers; the firewall's allow-list grows. */
export function publishService(demo: Demo, id = "docs-1"): Promise<StepReport> {
  return step(demo, `a new public service (${id}) registers`, { runs: { [FIREWALL_TASK]: 1 } }, async () => {
    await demo.registerService({ ID: id, Name: "docs", Address: "127.0.0.1", Port: 8443, Tags: ["public"] });
  });
}

/** The whole walk-through, in order (what `npm run demo` shows and the test checks). */
export const STEPS: ReadonlyArray<(demo: Demo) => Promise<StepReport>> = [initialSync, (d) => failInstance(d), (d) => joinInstance(d), (d) => publishService(d)];

/**
 * Makes a change, then waits until the world agrees with it: Consul (for health changes), the
 * tasks' runs, the allow-list file and — the real check — which instances answer through nginx.
 */
async function step(demo: Demo, title: string, wait: { runs: Record<string, number>; consul?: boolean }, change: () => Promise<void>): Promise<StepReport> {
  const before = Object.fromEntries(Object.keys(wait.runs).map((t) => [t, demo.daemon?.logEvents(t).length ?? 0]));
  const started = Date.now();
  await change();
  const daemon = demo.daemon!;
  const pool = demo.healthyWeb();
  let consulMs: number | undefined;
  if (wait.consul) {
    await demo.waitForConsul(pool);
    consulMs = Date.now() - started;
  }
  let traffic: TrafficSample;
  let allow: Awaited<ReturnType<Demo["waitForAllowList"]>>;
  try {
    for (const [task, n] of Object.entries(wait.runs)) await daemon.waitForRuns(task, before[task]! + n);
    [traffic, allow] = await Promise.all([waitForPool(demo.nginx!.url, pool), demo.waitForAllowList(demo.taggedIds("public"))]);
  } catch (e) {
    // Say why: the tasks' failed runs and the end of the daemon's log usually do.
    const failures = [LB_TASK, FIREWALL_TASK].flatMap((t) => daemon.logEvents(t).filter((r) => !r.success).map((r) => `  ${t}: ${r.error}`));
    throw new Error(
      `step '${title}': ${(e as Error).message}\n${failures.length ? `failed runs:\n${failures.join("\n")}\n` : ""}daemon log (end):\n${daemon.process.output().slice(-3_000)}\n` +
        `the daemon's Consul views (metrics):\n${await viewMetrics(daemon.apiUrl)}\nConsul's log (end):\n${demo.consul?.process.output().slice(-2_000) ?? "(no agent)"}`,
      { cause: e },
    );
  }
  const syncedMs = Date.now() - started;
  const events: Record<string, RunEvent[]> = {};
  let eventsFrom: "api" | "log" = "log";
  for (const task of [LB_TASK, FIREWALL_TASK]) {
    const got = await daemon.events(task);
    eventsFrom = got.from;
    // Runs that started during this step: our clock and the daemon's are the same machine's.
    events[task] = got.events.filter((e) => Date.parse(e.time) >= started - 50);
  }
  return { title, pool, traffic, allowList: allow.allow.map((a) => a.id).sort(), ...(consulMs !== undefined ? { consulMs } : {}), syncedMs, events, eventsFrom };
}

/** The daemon's blocking-query lines of GET /metrics (open queries, fetches, errors, resets), for a step that timed out. */
async function viewMetrics(apiUrl: string): Promise<string> {
  try {
    const text = await (await fetch(`${apiUrl}/metrics`, { signal: AbortSignal.timeout(2_000) })).text();
    return text
      .split("\n")
      .filter((l) => /^cts_consul_(blocking_queries|view_fetches_total|view_errors_total|view_index_resets_total|reachable|requests_total)/.test(l))
      .join("\n");
  } catch (err) {
    return `(not served: ${(err as Error).message})`;
  }
}
