/**
 * 4. Fresh tasks in parallel: `cts once` with many tasks that have never run (fresh working dir,
 * empty plugin cache, fresh state) at a high concurrency, several times. Every failed attempt
 * counts, including those cts's retries hid.
 */
import { spawn } from "node:child_process";
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { startConsul } from "../../test/support/consul.ts";
import { CTS_BIN } from "../../test/support/cts-process.ts";
import { instancesOf, registerInstances } from "../lib/catalog.ts";
import { lit } from "../lib/config.ts";
import { median } from "../lib/stats.ts";
import { writeChaosConfig } from "./lib/config.ts";
import { errorKinds, errorSamples, linesOf, mbRange, rssSampler, secs } from "./lib/observe.ts";
import { describe, killAll, processesUnder, type FoundProcess } from "./lib/procs.ts";
import type { ScenarioFn } from "./lib/types.ts";

const SERVICES = 10;
const RUN_LIMIT_MS = 150_000;

interface OnceRun {
  run: number;
  wallMs: number;
  exit: number | string | null;
  tasksFailed: number;
  retried: number;
  filesRight: number;
  orphans: number;
  rss: { min: number; max: number };
  errors: string[];
}

/** Runs `cts once --json` to the end (or its limit); its log lines and results. */
function once(configFile: string, cwd: string): Promise<{ wallMs: number; exit: number | string | null; stdout: string; lines: string[]; rss: { min: number; max: number } }> {
  return new Promise((resolve) => {
    const start = performance.now();
    const child = spawn(process.execPath, [CTS_BIN, "once", "--config", configFile, "--json", "--log-level", "info"], { cwd, stdio: ["ignore", "pipe", "pipe"] });
    const rss = rssSampler(child.pid!);
    let stdout = "";
    let stderr = "";
    child.stdout!.on("data", (d: Buffer) => (stdout += d.toString("utf8")));
    child.stderr!.on("data", (d: Buffer) => (stderr += d.toString("utf8")));
    const limit = setTimeout(() => {
      child.kill("SIGTERM");
      setTimeout(() => child.kill("SIGKILL"), 10_000).unref();
    }, RUN_LIMIT_MS);
    child.on("exit", (code, signal) => {
      clearTimeout(limit);
      resolve({ wallMs: performance.now() - start, exit: code ?? signal, stdout, lines: stderr.split("\n").filter(Boolean), rss: rss.stop() });
    });
  });
}

export const run: ScenarioFn = async (ctx) => {
  const { freshTasks, freshConcurrency, freshRuns } = ctx.sizes;
  const consul = await startConsul();
  ctx.onCleanup(() => consul.stop());
  const instances = Array.from({ length: SERVICES }, (_, s) => instancesOf(`svc-${s}`, 3, { nodes: 3, prefix: "fresh-node" })).flat();
  await registerInstances(consul, instances);
  const want = (k: number) => instances.filter((i) => i.service === `svc-${k % SERVICES}`).map((i) => `${i.service} ${i.id} ${i.address}:${i.port} passing`);

  const runs: OnceRun[] = [];
  const allLines: string[] = [];
  const orphans: FoundProcess[] = [];
  for (let r = 1; r <= freshRuns; r++) {
    const dir = join(ctx.tmp, `run-${r}`);
    await mkdir(join(dir, "out"), { recursive: true });
    const file = await writeChaosConfig({
      dir,
      consulAddress: consul.address,
      backend: { consul: { path: `chaos/fresh/run-${r}`, gzip: true } },
      extra: `concurrency: ${freshConcurrency},`,
      tasks: Array.from({ length: freshTasks }, (_, k) => `new MemberFile({ name: "t${k}", path: ${lit(join(dir, "out", `t${k}.txt`))}, condition: services({ names: ["svc-${k % SERVICES}"] }) })`),
    });
    ctx.onCleanup(() => void killAll(processesUnder(join(dir, "sync-tasks"))));
    const res = await once(file, dir);
    let tasksFailed = freshTasks;
    try {
      const parsed = JSON.parse(res.stdout) as { tasks: Array<{ ok: boolean }> };
      tasksFailed = parsed.tasks.filter((t) => !t.ok).length + Math.max(0, freshTasks - parsed.tasks.length);
    } catch {
      /* no JSON: cts once did not finish; every task counts as failed */
    }
    const left = processesUnder(join(dir, "sync-tasks"));
    orphans.push(...left);
    killAll(left);
    const retried = res.lines.filter((l) => /attempt \d+ failed, retrying/.test(l)).length;
    const filesRight = Array.from({ length: freshTasks }, (_, k) => linesOf(join(dir, "out", `t${k}.txt`)).join("\n") === want(k).sort().join("\n")).filter(Boolean).length;
    allLines.push(...res.lines);
    runs.push({ run: r, wallMs: res.wallMs, exit: res.exit, tasksFailed, retried, filesRight, orphans: left.length, rss: res.rss, errors: errorKinds(res.lines) });
    ctx.log(`run ${r}: ${secs(res.wallMs)}, exit ${res.exit}, ${tasksFailed} tasks failed, ${retried} attempts retried, ${filesRight}/${freshTasks} files right, orphans: ${describe(left)}`);
  }

  const failedAttempts = runs.reduce((a, r) => a + r.tasksFailed + r.retried, 0);
  // `cts once` starts small and grows: the peak of each run is what matters.
  const rss = { min: Math.min(...runs.map((r) => r.rss.max)), max: Math.max(...runs.map((r) => r.rss.max)) };
  const badRuns = runs.filter((r) => r.tasksFailed > 0 || r.retried > 0).length;
  const problems = [
    ...(failedAttempts ? [`${failedAttempts} failed attempts in ${badRuns} of ${runs.length} runs`] : []),
    ...(runs.some((r) => r.filesRight < freshTasks) ? [`${runs.reduce((a, r) => a + freshTasks - r.filesRight, 0)} task files wrong`] : []),
    ...(orphans.length ? [`${orphans.length} processes left after cts once exited`] : []),
  ];
  const wall = runs.map((r) => r.wallMs);
  return {
    title: `${freshTasks} fresh tasks at concurrency ${freshConcurrency}, ${freshRuns} runs`,
    method: `Each run is a real \`cts once --json\` with ${freshTasks} MemberFile tasks (each on one of ${SERVICES} services × 3 instances), concurrency ${freshConcurrency}, a fresh working dir (so an empty default plugin cache, \`<workingDir>/.plugin-cache\`) and a fresh Consul KV state path. Failed attempts = tasks that failed in the end (from the JSON) + "attempt N failed, retrying" lines (cts retries an apply twice). Files are checked against the catalog; processes left under the working dir after exit are counted and killed.`,
    figures: {
      scenario: "4. Fresh tasks",
      changes: `${freshRuns} × ${freshTasks} tasks`,
      runs: `${runs.reduce((a, r) => a + freshTasks - r.tasksFailed, 0)}/${freshRuns * freshTasks} tasks ok`,
      errors: String(failedAttempts),
      orphans: orphans.length ? describe(orphans) : "0",
      rss: `peak ${mbRange(rss)}`,
      recovery: `median ${secs(median(wall))} per run (max ${secs(Math.max(...wall))})`,
      verdict: problems.length ? `❌ ${problems.join("; ")}` : "✅ no failed attempt",
    },
    tables: [
      {
        columns: ["Run", "Wall time", "Exit", "Tasks failed", "Attempts retried", "Files right", "Orphans", "Peak RSS", "Errors seen"],
        rows: runs.map((r) => [r.run, secs(r.wallMs), String(r.exit), r.tasksFailed, r.retried, `${r.filesRight}/${freshTasks}`, r.orphans, mbRange({ min: r.rss.max, max: r.rss.max }).replace(/^\d+–/, ""), r.errors.join(" / ") || "–"]),
      },
    ],
    notes: [`Causes of the failed attempts over all runs: ${errorKinds(allLines).join("; ") || "none"}.`, ...errorSamples(allLines, 4, 400).map((s) => `log: ${s}`)],
    data: { runs, orphans },
  };
};
