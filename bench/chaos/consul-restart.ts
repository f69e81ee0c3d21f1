/**
 * 2. Consul kill/restart: the dev agent is killed with SIGKILL under a watching daemon, stays down
 * for a while, and comes back on the same ports with an empty catalog and a reset index (a dev
 * agent keeps nothing); the services are registered again with one instance more. The daemon must
 * stay up and apply the new catalog; a second change afterwards shows the watch is healthy.
 */
import { join } from "node:path";
import { startConsul, type ConsulAgent } from "../../test/support/consul.ts";
import { sleep } from "../lib/stats.ts";
import { startMemberFileDaemon } from "./lib/config.ts";
import { errorSamples, failedAttempts, mbRange, rssSampler, quiesce, secs, since, tally, waitForFile } from "./lib/observe.ts";
import { alive, consulPid, describe, killAll, processesUnder } from "./lib/procs.ts";
import type { ScenarioFn } from "./lib/types.ts";

const SERVICE = "web";
const RECOVERY_LIMIT_MS = 90_000;
const instance = (i: number) => ({ id: `${SERVICE}-${i}`, address: `10.7.0.${i}`, port: 8080 + i });
const line = (i: number) => `${SERVICE} ${instance(i).id} ${instance(i).address}:${instance(i).port} passing`;

async function registerAll(consul: ConsulAgent, ids: number[]): Promise<void> {
  for (const i of ids) {
    const s = instance(i);
    await consul.api("PUT", "/v1/catalog/register", {
      Node: "web-node",
      Address: "10.7.0.254",
      Service: { ID: s.id, Service: SERVICE, Address: s.address, Port: s.port },
      Check: { CheckID: `chk-${s.id}`, Name: "web", ServiceID: s.id, Status: "passing" },
    });
  }
}

export const run: ScenarioFn = async (ctx) => {
  const downMs = ctx.sizes.consulDownSeconds * 1000;
  const consul = await startConsul();
  ctx.onCleanup(() => consul.stop());
  await registerAll(consul, [1, 2]);

  const { dir, out, d } = await startMemberFileDaemon(ctx, { scenario: "consul-restart", consulAddress: consul.address, task: "web", service: SERVICE });
  const t = tally(d);
  await waitForFile(out, [line(1), line(2)], { timeoutMs: 180_000, pid: d.pid });
  const before = t.counts();
  const rss = rssSampler(d.pid);

  const pid = consulPid(consul.port);
  if (!pid) throw new Error(`no consul agent process found for port ${consul.port}`);
  ctx.log(`kill -9 of the Consul agent (pid ${pid}); down for ${downMs / 1000} s`);
  process.kill(pid, "SIGKILL");
  await sleep(downMs);
  const aliveWhileDown = alive(d.pid);
  const warningsWhileDown = since(t.counts(), before);

  // ConsulAgent.restart() waits for the old process to exit, starts the agent on the same ports
  // and returns once it has a leader and has registered its own node.
  await consul.restart();
  const back = performance.now();
  await registerAll(consul, [1, 2, 3]);
  const written = performance.now();
  ctx.log(`Consul back; services registered again with one more instance: waiting for the task`);
  let sawEmpty = false;
  let appliedAt: number | undefined;
  let why = "";
  try {
    appliedAt = await waitForFile(out, [line(1), line(2), line(3)], { timeoutMs: RECOVERY_LIMIT_MS, pid: d.pid, onPoll: (l) => void (l.length === 0 && (sawEmpty = true)) });
  } catch (err) {
    why = err instanceof Error ? err.message : String(err);
  }
  // A second change once recovered: the watch must be live again, not just have run once.
  let secondMs = NaN;
  if (appliedAt !== undefined) {
    const t2 = performance.now();
    await consul.api("PUT", "/v1/catalog/deregister", { Node: "web-node", ServiceID: instance(1).id });
    try {
      secondMs = (await waitForFile(out, [line(2), line(3)], { timeoutMs: 60_000, pid: d.pid })) - t2;
    } catch (err) {
      why = `the change after recovery was not applied: ${err instanceof Error ? err.message : String(err)}`;
    }
  }
  const mem = rss.stop();
  const counts = since(await quiesce(t), before);
  const daemonAlive = alive(d.pid);
  const lines = d.lines();
  await d.stop();
  const left = processesUnder(join(dir, "sync-tasks"));
  killAll(left);

  const recoveryMs = appliedAt !== undefined ? appliedAt - back : NaN;
  const failed = failedAttempts(counts);
  const problems = [
    ...(!aliveWhileDown || !daemonAlive ? ["the daemon died"] : []),
    ...(why ? [why.split("\n")[0]!] : []),
    ...(counts.failedRuns > 0 ? [`${counts.failedRuns} failed runs`] : []),
    ...(left.length ? [`${left.length} processes left after stop`] : []),
  ];
  return {
    title: "Consul killed and restarted under the daemon",
    method: `One MemberFile task (passing instances of '${SERVICE}', local state) in a real \`cts watch\`. The Consul dev agent gets SIGKILL, stays down ${downMs / 1000} s, and is started again on the same ports (empty catalog, index reset to a few). The two instances are registered again plus a third; the clock runs from "agent has a leader" to the file listing all three. Then one instance is deregistered and timed the same way.`,
    figures: {
      scenario: "2. Consul kill/restart",
      changes: "kill + restart + 2",
      runs: String(counts.runs + counts.failedRuns),
      errors: `${failed}${counts.watchWarnings ? ` (+${counts.watchWarnings} watch warnings)` : ""}`,
      orphans: left.length ? describe(left) : "0",
      rss: mbRange(mem),
      recovery: appliedAt !== undefined ? `${secs(recoveryMs)} after Consul back` : "never",
      verdict: problems.length ? `❌ ${problems.join("; ")}` : "✅ daemon up, new catalog applied",
    },
    tables: [
      {
        columns: ["Measure", "Value"],
        rows: [
          ["Daemon alive while Consul was down / at the end", `${aliveWhileDown ? "yes" : "no"} / ${daemonAlive ? "yes" : "no"}`],
          ["Log lines while Consul was down: watch warnings / WARN / ERROR", `${warningsWhileDown.watchWarnings} / ${warningsWhileDown.warnLines} / ${warningsWhileDown.errorLines}`],
          ["Consul back (leader) → new catalog applied", appliedAt !== undefined ? secs(recoveryMs) : `not within ${RECOVERY_LIMIT_MS / 1000} s`],
          ["Services registered again → applied", appliedAt !== undefined ? secs(appliedAt - written) : "–"],
          ["The fresh agent's empty catalog was applied in between", sawEmpty ? "yes (the file was empty for a while)" : "no"],
          ["Next change after recovery → applied", secs(secondMs)],
          ["Task runs / failed runs / retried attempts (whole scenario)", `${counts.runs} / ${counts.failedRuns} / ${counts.retried}`],
        ],
      },
    ],
    notes: [
      "The recovery time includes the watch's retry backoff while Consul was down (src/watch/view.ts: 250 ms doubling per failed read, jittered between half and all of it, capped at 30 s): after several failures the next read can come seconds after the agent is back.",
      ...errorSamples(lines).map((s) => `log: ${s}`),
    ],
    data: { downMs, aliveWhileDown, daemonAlive, warningsWhileDown, recoveryMs, registeredToAppliedMs: appliedAt !== undefined ? appliedAt - written : null, sawEmpty, secondChangeMs: secondMs, counts, rss: mem, leftAfterStop: left, error: why || undefined },
  };
};
