/**
 * The Terraform Cloud driver's own overhead on a change, against the TFE-API test server (which
 * really runs OpenTofu): catalog change → run created on the server, and run final on the server →
 * event recorded by cts. The server's own run (plan + apply) is measured beside it and is not
 * counted. Then `tfcTasks` tasks changing at once: wall time, runs created, overhead per task.
 */
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { loadConfig } from "../src/config/load.ts";
import { createRuntime } from "../src/daemon/compose.ts";
import { createLogger } from "../src/log/logger.ts";
import type { TaskEvent } from "../src/runtime/events.ts";
import { startConsul } from "../test/support/consul.ts";
import { startTfcServer, type TfcTestServer } from "../test/support/tfc-server/index.ts";
import type { Run } from "../test/support/tfc-server/store.ts";
import { PUBLIC_API } from "./lib/config.ts";
import { ms, rounded, sleep, summarize } from "./lib/stats.ts";
import type { BenchContext, BenchFn, TargetCheck } from "./lib/types.ts";

const TARGET_MS = 150;
const TOKEN_VAR = "CTS_BENCH_TFC_TOKEN";
const FINAL = new Set(["applied", "planned_and_finished", "errored", "discarded", "canceled", "force_canceled", "policy_soft_failed"]);

const MODULE = `variable "services" { type = any }
variable "path" { type = string }
resource "local_file" "ids" {
  filename = var.path
  content  = join(",", sort([for s in var.services : s.id]))
}
`;

/** One change as the server and cts saw it (epoch ms). */
interface Sample {
  change: number;
  created: number;
  final: number;
  event: number;
  status: string;
}

const finalAt = (run: Run) => Date.parse(run.statusTimestamps[`${run.status.replace(/_/g, "-")}-at`] ?? "");

/** The first run of `workspace` created at or after `since`, once it is final. */
function runAfter(server: TfcTestServer, workspace: string, since: number): Run | undefined {
  const ws = [...server.store.workspaces.values()].find((w) => w.name === workspace);
  if (!ws) return undefined;
  return [...server.store.runs.values()].find((r) => r.workspaceId === ws.id && Date.parse(r.createdAt) >= since && FINAL.has(r.status));
}

async function until<T>(what: string, limitMs: number, probe: () => T | undefined): Promise<T> {
  const end = Date.now() + limitMs;
  for (;;) {
    const v = probe();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

export const run: BenchFn = async (ctx: BenchContext) => {
  const samples = ctx.sizes.tfcSamples;
  const many = ctx.sizes.tfcTasks;
  const [server, consul] = await Promise.all([startTfcServer(), startConsul()]);
  ctx.onCleanup(() => Promise.all([server.stop(), consul.stop()]).then(() => undefined));
  process.env[TOKEN_VAR] = server.token;
  await consul.register({ Name: "solo", ID: "solo-0", Address: "10.0.0.1", Port: 80 });
  await consul.register({ Name: "many", ID: "many-0", Address: "10.0.0.2", Port: 80 });
  await mkdir(join(ctx.tmp, "modules", "ids"), { recursive: true });
  await writeFile(join(ctx.tmp, "modules", "ids", "main.tf"), MODULE);
  const task = (name: string, service: string) =>
    `new ModuleTask({ name: ${JSON.stringify(name)}, condition: services({ names: [${JSON.stringify(service)}] }), module: "./modules/ids", variables: { path: ${JSON.stringify(join(ctx.tmp, `${name}.txt`))} } })`;
  const names = Array.from({ length: many }, (_, i) => `m${i + 1}`);
  const file = join(ctx.tmp, "cts.config.ts");
  await writeFile(
    file,
    `import { defineConfig, ModuleTask, services } from ${JSON.stringify(PUBLIC_API)};
export default defineConfig({
  consul: { address: ${JSON.stringify(consul.address)} },
  driver: { terraformCloud: { hostname: ${JSON.stringify(server.url)}, organization: ${JSON.stringify(server.organization)}, token: { env: ${JSON.stringify(TOKEN_VAR)} }, workspaces: { prefix: "cts-" } } },
  bufferPeriod: false,
  concurrency: ${many},
  tasks: [
    ${[task("solo", "solo"), ...names.map((n) => task(n, "many"))].join(",\n    ")}
  ],
});
`,
  );

  const rt = createRuntime(await loadConfig(file), { mode: "watch", bufferOff: true, log: createLogger({ level: "error", write: () => undefined }) });
  ctx.onCleanup(() => rt.close());
  // When cts records each event (the instrumented store: the bench's only hook into the runtime).
  const events: Array<{ task: string; at: number; event: TaskEvent }> = [];
  const add = rt.controller.events.add.bind(rt.controller.events);
  rt.controller.events.add = (e: TaskEvent) => {
    events.push({ task: e.task_name, at: Date.now(), event: e });
    add(e);
  };
  const eventAfter = (t: string, since: number) => events.find((e) => e.task === t && e.at >= since);
  const started = Date.now();
  await rt.controller.watch();
  for (const t of ["solo", ...names]) await until(`the first run of ${t}`, 10 * 60_000, () => eventAfter(t, started));
  ctx.log(`first runs of ${many + 1} tasks done in ${ms(Date.now() - started)}`);

  const one: Sample[] = [];
  ctx.window.begin();
  for (let i = 1; i <= samples; i++) {
    await sleep(300);
    const change = Date.now();
    await consul.register({ Name: "solo", ID: `solo-${i}`, Address: "10.0.0.1", Port: 80 + i });
    const ev = await until("the solo event", 5 * 60_000, () => eventAfter("solo", change));
    const r = await until("the solo run", 60_000, () => runAfter(server, "cts-solo", change));
    one.push({ change, created: Date.parse(r.createdAt), final: finalAt(r), event: ev.at, status: r.status });
  }

  await sleep(300);
  const change = Date.now();
  await consul.register({ Name: "many", ID: "many-1", Address: "10.0.0.2", Port: 81 });
  const burst: Sample[] = [];
  for (const n of names) {
    const ev = await until(`the event of ${n}`, 10 * 60_000, () => eventAfter(n, change));
    const r = await until(`the run of ${n}`, 60_000, () => runAfter(server, `cts-${n}`, change));
    burst.push({ change, created: Date.parse(r.createdAt), final: finalAt(r), event: ev.at, status: r.status });
  }
  ctx.window.end();
  const runsCreated = [...server.store.runs.values()].filter((r) => Date.parse(r.createdAt) >= change).length;
  const wall = Math.max(...burst.map((s) => s.event)) - change;

  const toRun = summarize(one.map((s) => s.created - s.change));
  const toEvent = summarize(one.map((s) => s.event - s.final));
  const overhead = summarize(one.map((s) => s.created - s.change + (s.event - s.final)));
  const serverRun = summarize(one.map((s) => s.final - s.created));
  const bOverhead = summarize(burst.map((s) => s.created - s.change + (s.event - s.final)));
  const bToRun = summarize(burst.map((s) => s.created - s.change));
  const bToEvent = summarize(burst.map((s) => s.event - s.final));
  const bServer = summarize(burst.map((s) => s.final - s.created));
  const statuses = [...new Set([...one, ...burst].map((s) => s.status))].join(", ");

  const met = overhead.p50 <= TARGET_MS;
  const targets: TargetCheck[] = [
    {
      id: "tfc.overhead",
      what: "TFC driver overhead on a change (change → run created + run final → event), p50",
      target: `≤ ${TARGET_MS} ms`,
      actual: `${ms(overhead.p50)} (created ${ms(toRun.p50)} + event ${ms(toEvent.p50)})`,
      met,
      ...(met
        ? {}
        : { why: "run final → event waits for the driver's next poll of the run (the TFC API has no push): 100 ms after each status change, doubling to 1 s while the status stays, so a run whose last phase is long is seen up to that interval late; change → run created is the synthesis, the upload and the variables." }),
    },
  ];
  const row = (label: string, s: ReturnType<typeof summarize>) => [label, ms(s.p50), ms(s.p95), ms(s.max)];
  return {
    title: "Terraform Cloud driver overhead",
    method: `${samples} single changes of one ModuleTask (a local_file) against the TFE-API test server on 127.0.0.1, which runs OpenTofu plan + apply per run; timestamps: the registration in Consul, the run's creation and final status on the server, and the event as cts records it. Then one change seen by ${many} tasks at once (concurrency ${many}). Buffer period off; the driver's default run poll (100 ms after the run is created and after each status change, doubling up to 1 s).`,
    tables: [
      {
        title: "One task, one change",
        columns: ["step", "p50", "p95", "max"],
        rows: [
          row("change → run created (cts)", toRun),
          row("run created → final (server: tofu plan + apply)", serverRun),
          row("run final → event recorded (cts)", toEvent),
          row("cts overhead (the two cts steps)", overhead),
        ],
      },
      {
        title: `${many} tasks changing at once`,
        columns: ["what", "value"],
        rows: [
          ["wall time (change → last event)", ms(wall)],
          ["runs created", runsCreated],
          ["change → run created, p50 / max", `${ms(bToRun.p50)} / ${ms(bToRun.max)}`],
          ["run created → final (server), p50 / max", `${ms(bServer.p50)} / ${ms(bServer.max)}`],
          ["run final → event, p50 / max", `${ms(bToEvent.p50)} / ${ms(bToEvent.max)}`],
          ["cts overhead per task, p50 / max", `${ms(bOverhead.p50)} / ${ms(bOverhead.max)}`],
        ],
      },
    ],
    targets,
    notes: [
      `Final run statuses: ${statuses}.`,
      "The server runs every run's OpenTofu on this same machine (2 cores), so with many tasks its runs compete with cts for the CPU; Terraform Cloud runs them on its own workers.",
    ],
    data: {
      single: { toRun: rounded(toRun), serverRun: rounded(serverRun), toEvent: rounded(toEvent), overhead: rounded(overhead) },
      burst: { tasks: many, wallMs: wall, runsCreated, toRun: rounded(bToRun), serverRun: rounded(bServer), toEvent: rounded(bToEvent), overhead: rounded(bOverhead) },
    },
  };
};
