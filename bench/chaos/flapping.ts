/**
 * 1. Flapping: one task watches a service whose instances are registered, deregistered and
 * health-flipped at hundreds of changes a second for a minute. Then: does the file the task
 * applied equal the final catalog, and how long after the last change? Runs, failed attempts and
 * the daemon's RSS are recorded throughout.
 */
import { join } from "node:path";
import { startConsul } from "../../test/support/consul.ts";
import { startMemberFileDaemon } from "./lib/config.ts";
import { expectedLines, flap, makeSlots, seed } from "./lib/flapper.ts";
import { errorSamples, failedAttempts, linesOf, mbRange, rssSampler, quiesce, secs, since, tally, waitForFile } from "./lib/observe.ts";
import { alive, describe, killAll, processesUnder } from "./lib/procs.ts";
import type { ScenarioFn } from "./lib/types.ts";

const SERVICE = "flap";
/** How long the task may take to catch up after the last change before the scenario says so. */
const CONVERGE_LIMIT_MS = 90_000;
/** The file must hold the final catalog this long (a run with older data could still be in flight). */
const STABLE_MS = 5_000;

export const run: ScenarioFn = async (ctx) => {
  const { flapSeconds, flapRate, flapInstances, flapWorkers } = ctx.sizes;
  const consul = await startConsul();
  ctx.onCleanup(() => consul.stop());
  const slots = makeSlots(SERVICE, flapInstances);
  await seed(consul, SERVICE, slots);

  const { dir, out, d } = await startMemberFileDaemon(ctx, { scenario: "flapping", consulAddress: consul.address, task: "flap", service: SERVICE });
  const t = tally(d);
  ctx.log(`daemon pid ${d.pid}; waiting for the first apply`);
  await waitForFile(out, expectedLines(SERVICE, slots), { timeoutMs: 180_000, pid: d.pid });
  const before = t.counts();

  const rss = rssSampler(d.pid);
  ctx.log(`flapping ${flapInstances} instances at up to ${flapRate} changes/s for ${flapSeconds} s`);
  const st = await flap(consul, SERVICE, slots, { seconds: flapSeconds, rate: flapRate, workers: flapWorkers, stop: () => !alive(d.pid) });
  const achieved = st.changes / (st.elapsedMs / 1000);
  const full = st.perSecond.slice(0, Math.floor(st.elapsedMs / 1000));
  ctx.log(`${st.changes} changes in ${secs(st.elapsedMs)} (${achieved.toFixed(0)}/s, slowest second ${Math.min(...full)}); waiting for the task to converge`);

  const expected = expectedLines(SERVICE, slots);
  // The writer's model must be what Consul holds; otherwise the check below would be meaningless.
  const inConsul = ((await consul.api("GET", `/v1/health/service/${SERVICE}?passing`)) as Array<{ Service: { ID: string } }>).map((e) => e.Service.ID).sort();
  const modelIds = slots.filter((s) => s.present && s.passing).map((s) => s.id).sort();
  const modelOk = inConsul.join() === modelIds.join();

  let convergedAt: number | undefined;
  let why = "";
  try {
    convergedAt = await waitForFile(out, expected, { timeoutMs: CONVERGE_LIMIT_MS + STABLE_MS, stableMs: STABLE_MS, pid: d.pid });
  } catch (err) {
    why = err instanceof Error ? err.message : String(err);
  }
  const mem = rss.stop();
  const counts = since(await quiesce(t), before);
  const daemonAlive = alive(d.pid);
  const lines = d.lines();
  const convergeMs = convergedAt !== undefined ? Math.max(0, convergedAt - st.lastChangeAt) : NaN;
  await d.stop();
  const left = processesUnder(join(dir, "sync-tasks"));
  killAll(left);

  const failed = failedAttempts(counts);
  const problems = [
    ...(achieved < 500 ? [`writer reached only ${achieved.toFixed(0)} changes/s (< 500)`] : []),
    ...(!modelOk ? ["the writer's model differs from Consul's catalog"] : []),
    ...(convergedAt === undefined ? [`not converged: ${why}`] : []),
    ...(failed > 0 ? [`${failed} failed attempts`] : []),
    ...(!daemonAlive ? ["the daemon died"] : []),
    ...(left.length ? [`${left.length} processes left after stop`] : []),
  ];
  return {
    title: "Flapping service",
    method: `One MemberFile task (passing instances of '${SERVICE}', buffer off, local state) in a real \`cts watch\`. ${flapWorkers} writers register, deregister and flip the health check of ${flapInstances} instances through /v1/catalog/register|deregister, one acknowledged write per change, paced at ${flapRate}/s for ${flapSeconds} s. Then the file is polled until it equals the final catalog (checked against /v1/health/service?passing) for ${STABLE_MS / 1000} s; runs and failed attempts come from the daemon's log; RSS from /proc every 250 ms.`,
    figures: {
      scenario: "1. Flapping",
      changes: `${st.changes} (${achieved.toFixed(0)}/s)`,
      runs: String(counts.runs + counts.failedRuns),
      errors: String(failed),
      orphans: left.length ? describe(left) : "0",
      rss: mbRange(mem),
      recovery: convergedAt !== undefined ? `${secs(convergeMs)} to converge` : "never",
      verdict: problems.length ? `❌ ${problems.join("; ")}` : "✅ final state applied",
    },
    tables: [
      {
        columns: ["Measure", "Value"],
        rows: [
          ["Changes (register / deregister / health flip)", `${st.changes} (${st.registers} / ${st.deregisters} / ${st.flips})`],
          ["Achieved rate", `${achieved.toFixed(0)}/s over ${secs(st.elapsedMs)}; slowest full second ${Math.min(...full)}, fastest ${Math.max(...full)}`],
          ["Writes Consul refused (retried)", st.writeErrors],
          ["Task runs (applied or no-op) / failed runs / retried attempts", `${counts.runs} / ${counts.failedRuns} / ${counts.retried}`],
          ["Final catalog (passing instances)", `${expected.length} of ${flapInstances}; writer model ${modelOk ? "=" : "≠"} Consul`],
          ["Last change → file equals the final catalog", convergedAt !== undefined ? secs(convergeMs) : `not within ${CONVERGE_LIMIT_MS / 1000} s (${linesOf(out).length} lines)`],
          ["Daemon RSS min / max during the run", `${mbRange(mem)} (${mem.samples} samples)`],
          ["Daemon alive at the end", daemonAlive ? "yes" : "no"],
        ],
      },
    ],
    notes: errorSamples(lines).map((s) => `log: ${s}`),
    data: { ...st, achievedRate: achieved, counts, expected: expected.length, modelMatchesConsul: modelOk, convergeMs, rss: mem, daemonAlive, leftAfterStop: left, error: why || undefined },
  };
};
