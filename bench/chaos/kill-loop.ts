/**
 * 3. kill -9 loops: a change starts a slow apply (a local-exec `sleep`), the daemon gets SIGKILL
 * in the middle of it, the processes it left are counted, and a new daemon is started on the same
 * working dir and state (Consul KV backend, as cts defaults to). Each round times kill → the new
 * daemon has applied the whole catalog, and counts its failed attempts.
 */
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { startConsul, type ConsulAgent } from "../../test/support/consul.ts";
import { startDaemonProcess, type DaemonProcess } from "../lib/daemon-process.ts";
import { lit } from "../lib/config.ts";
import { sleep } from "../lib/stats.ts";
import { writeChaosConfig } from "./lib/config.ts";
import { errorSamples, linesOf, mbRange, rssSampler, secs, tally, waitForFile } from "./lib/observe.ts";
import { alive, describe, killAll, processesUnder, type FoundProcess } from "./lib/procs.ts";
import { orphanLifetimes, stateLockWatch } from "./lib/trackers.ts";
import type { ScenarioFn } from "./lib/types.ts";

const SERVICE = "slow";
/** Per round: kill → converged, or the round counts as not recovered. */
const ROUND_LIMIT_MS = 60_000;
/** No new round starts after this much time in the scenario (its own limit is 6 minutes). */
const BUDGET_MS = 4.5 * 60_000;
/** After the last round: how long to wait for the lock and orphans to go away on their own. */
const LINGER_MS = 45_000;

const line = (i: number) => `${SERVICE} ${SERVICE}-${i} 10.6.0.${i}:${7000 + i} passing`;
const expected = (upTo: number) => Array.from({ length: upTo + 1 }, (_, i) => line(i));

function register(consul: ConsulAgent, i: number) {
  return consul.api("PUT", "/v1/catalog/register", {
    Node: "slow-node",
    Address: "10.6.0.254",
    Service: { ID: `${SERVICE}-${i}`, Service: SERVICE, Address: `10.6.0.${i}`, Port: 7000 + i },
    Check: { CheckID: `chk-${SERVICE}-${i}`, Name: "slow", ServiceID: `${SERVICE}-${i}`, Status: "passing" },
  });
}

interface Round {
  round: number;
  killedAt?: number;
  /** Longest life after the kill per kind of orphan. */
  orphanLives: string;
  /** Kill → the state lock in Consul seen free (null: still held when the round ended). */
  lockFreedMs: number | null;
  /** How long this round's orphans outlived the kill (ms; null: still running at the end). */
  orphanLifeMs: number | null;
  /** What ran under the working dir just before the kill. */
  beforeKill: string;
  orphans: number;
  orphanKinds: string;
  /** Orphans still running when the new daemon had converged (or gave up). */
  orphansAtRecovery: number;
  recoveryMs: number | null;
  failedRuns: number;
  retried: number;
  outcome: string;
}

/** Waits until the file holds the catalog and the daemon logged an apply, or a run failed, or time ran out. */
async function recovery(d: DaemonProcess, t: ReturnType<typeof tally>, out: string, want: string[], limitMs: number): Promise<{ at?: number; outcome: string }> {
  const deadline = performance.now() + limitMs;
  while (performance.now() < deadline) {
    const c = t.counts();
    if (c.runs > 0 && c.failedRuns === 0) {
      try {
        return { at: await waitForFile(out, want, { timeoutMs: 1_000, pid: d.pid }), outcome: "converged" };
      } catch {
        /* applied an older catalog: keep waiting for the next run */
      }
    }
    if (c.failedRuns > 0) {
      return { outcome: `run failed: ${lastError(d)}` };
    }
    if (!alive(d.pid)) return { outcome: "the new daemon exited" };
    await sleep(100);
  }
  return { outcome: `not converged within ${limitMs / 1000} s (file: ${linesOf(out).length} of ${want.length} lines)` };
}

/** Waits until the change's apply runs its local-exec sleep; or says why it did not. */
async function applyStarted(d: DaemonProcess, t: ReturnType<typeof tally>, failedBefore: number, work: string): Promise<string> {
  const deadline = performance.now() + 60_000;
  while (performance.now() < deadline) {
    if (processesUnder(work).some((p) => p.cmd.startsWith("sleep "))) return "running";
    if (t.counts().failedRuns > failedBefore) return `the change's run failed before its apply: ${lastError(d)}`;
    if (!alive(d.pid)) return "the daemon exited";
    await sleep(50);
  }
  return `no apply started within 60 s (${describe(processesUnder(work))} under the working dir)`;
}

function lastError(d: DaemonProcess): string {
  const err = d.lines().reverse().find((l) => /\[ERROR\].*task 'slow'/.test(l)) ?? "";
  return err.replace(/^.*task 'slow': (Task 'slow': )?/, "").slice(0, 200);
}

export const run: ScenarioFn = async (ctx) => {
  const { killLoops, killSleepSeconds } = ctx.sizes;
  const started = performance.now();
  const dir = join(ctx.tmp, "kill9");
  const work = join(dir, "sync-tasks");
  // Runs last: whatever the rounds left under the working dir (also when a round throws).
  ctx.onCleanup(() => void killAll(processesUnder(work)));
  const consul = await startConsul();
  ctx.onCleanup(() => consul.stop());
  await register(consul, 0);

  await mkdir(dir, { recursive: true });
  const out = join(dir, "members.txt");
  const file = await writeChaosConfig({
    dir,
    consulAddress: consul.address,
    tasks: [`new SlowMemberFile("slow", services({ names: [${lit(SERVICE)}] }), ${lit(out)}, ${killSleepSeconds})`],
  });
  const lifetimes = orphanLifetimes();
  ctx.onCleanup(() => lifetimes.stop());
  const lock = stateLockWatch(consul, "consul-terraform-sync/");
  ctx.onCleanup(() => lock.stop());
  let d = startDaemonProcess(file, { cwd: dir });
  ctx.onCleanup(() => d.stop());
  let t = tally(d);
  ctx.log(`daemon pid ${d.pid}; waiting for the first (slow) apply`);
  await waitForFile(out, expected(0), { timeoutMs: 180_000, pid: d.pid });
  await d.waitForLine(/task 'slow': applied/, 60_000, { seen: true });
  const rss = rssSampler(d.pid);

  const rounds: Round[] = [];
  const lines: string[] = [];
  const orphanList: Array<FoundProcess & { round: number }> = [];
  for (let i = 1; i <= killLoops; i++) {
    if (performance.now() - started > BUDGET_MS) break;
    const before = t.counts();
    await register(consul, i);
    // Mid-apply: the local-exec sleep of this change is running (unless the run fails first).
    const phase = await applyStarted(d, t, before.failedRuns, work);
    if (phase !== "running") {
      rounds.push({ round: i, orphanLives: "–", lockFreedMs: null, orphanLifeMs: null, beforeKill: "–", orphans: 0, orphanKinds: "–", orphansAtRecovery: 0, recoveryMs: null, failedRuns: t.counts().failedRuns - before.failedRuns, retried: t.counts().retried - before.retried, outcome: `not killed: ${phase}` });
      ctx.log(`round ${i}: not killed: ${phase}`);
      continue;
    }
    await sleep(Math.min(1_000, (killSleepSeconds * 1000) / 4));
    const beforeKill = describe(processesUnder(work));
    d.signal("SIGKILL");
    await d.stop();
    const killedAt = performance.now();
    lines.push(...d.lines());
    await sleep(500);
    // Only processes not counted in an earlier round (a leaked provider would otherwise count again).
    const orphans = lifetimes.add(processesUnder(work), killedAt).map((p) => ({ ...p, round: i }));
    orphanList.push(...orphans);
    ctx.log(`round ${i}: kill -9 with ${beforeKill} under the working dir; 0.5 s later: ${describe(orphans)}`);

    d = startDaemonProcess(file, { cwd: dir });
    t = tally(d);
    const r = await recovery(d, t, out, expected(i), ROUND_LIMIT_MS);
    const c = t.counts();
    const atRecovery = processesUnder(work).filter((p) => orphans.some((o) => o.pid === p.pid));
    rounds.push({
      round: i,
      killedAt,
      orphanLives: "",
      lockFreedMs: null,
      orphanLifeMs: null,
      beforeKill,
      orphans: orphans.length,
      orphanKinds: describe(orphans),
      orphansAtRecovery: atRecovery.length,
      recoveryMs: r.at !== undefined ? r.at - killedAt : null,
      failedRuns: c.failedRuns,
      retried: c.retried,
      outcome: r.outcome,
    });
    ctx.log(`round ${i}: ${r.outcome}${r.at !== undefined ? ` ${secs(r.at - killedAt)} after the kill` : ""}; failed attempts ${c.failedRuns + c.retried}`);
  }
  const mem = rss.stop();
  lines.push(...d.lines());
  // Give the orphans and the state lock of the last kill time to go (bounded), then read how long they lasted.
  const lastKill = Math.max(0, ...rounds.map((r) => r.killedAt ?? 0));
  while (lastKill && (lock.isHeld() || lifetimes.running().some((p) => p.kind === "tofu")) && performance.now() - lastKill < LINGER_MS) await sleep(250);
  for (const r of rounds) {
    const mine = orphanList.filter((p) => p.round === r.round);
    const life = lifetimes.longest(mine);
    r.orphanLifeMs = Number.isFinite(life) ? life : null;
    r.orphanLives = mine.length ? lifetimes.byKind(mine) : "–";
    const freed = r.killedAt !== undefined ? lock.freedAfter(r.killedAt) : undefined;
    r.lockFreedMs = freed !== undefined && r.killedAt !== undefined ? freed - r.killedAt : null;
  }
  const stillRunning = lifetimes.running();
  const lockKeys = lock.keys();
  const lockHeldAtEnd = lock.isHeld();
  await d.stop();
  const left = processesUnder(work);
  killAll(left);

  const totalOrphans = rounds.reduce((a, r) => a + r.orphans, 0);
  const failed = rounds.reduce((a, r) => a + r.failedRuns + r.retried, 0);
  const killed = rounds.filter((r) => r.beforeKill !== "–");
  const lingering = rounds.filter((r) => r.recoveryMs !== null && r.orphansAtRecovery > 0).length;
  const recovered = rounds.filter((r) => r.recoveryMs !== null);
  const worst = Math.max(...recovered.map((r) => r.recoveryMs!));
  const problems = [
    ...(rounds.length < killLoops ? [`only ${rounds.length} of ${killLoops} rounds fit the time budget`] : []),
    // Processes that outlive a kill -9 for a moment are unavoidable (nothing runs in the dead
    // daemon to stop them); what counts is whether they still run once a new daemon took over.
    ...(lingering ? [`orphans of ${lingering} kills still ran when the new daemon had converged`] : []),
    ...(killed.length < rounds.length ? [`${rounds.length - killed.length} of ${rounds.length} changes failed before their apply started`] : []),
    ...(recovered.length < killed.length ? [`${killed.length - recovered.length} of ${killed.length} restarts did not converge`] : []),
    ...(failed ? [`${failed} failed attempts`] : []),
    ...(stillRunning.length ? [`${stillRunning.length} orphans still running at the end (${describe(stillRunning)})`] : []),
  ];
  return {
    title: "kill -9 of the daemon in the middle of an apply",
    method: `One SlowMemberFile task (a terraform_data whose local-exec runs \`sleep ${killSleepSeconds}\`, then the member file; state in Consul KV, cts's default) in a real \`cts watch\`. Each round registers one more instance, waits until the apply's \`sleep\` runs, waits ${Math.min(1, killSleepSeconds / 4)} s more, sends SIGKILL to the daemon, scans /proc 0.5 s later for processes whose cwd or command line is under the working dir (tofu, providers, the local-exec shell), and starts a new daemon on the same config. A round has recovered when the new daemon logged an apply and the file lists the whole catalog; a failed run (after cts's own retries) ends the round. Limit ${ROUND_LIMIT_MS / 1000} s per round.`,
    figures: {
      scenario: "3. kill -9 loops",
      changes: `${rounds.length} changes, ${killed.length} kills`,
      runs: `${recovered.length}/${killed.length} restarts converged`,
      errors: String(failed),
      orphans: `${totalOrphans}${totalOrphans ? ` (${describe(orphanList)})` : ""} 0.5 s after; ${stillRunning.length} at the end`,
      rss: mbRange(mem),
      recovery: recovered.length ? `worst ${secs(worst)} after kill` : "never",
      verdict: problems.length ? `❌ ${problems.join("; ")}` : "✅ no orphans, every restart converged",
    },
    tables: [
      {
        columns: ["Round", "Running at kill", "New orphans 0.5 s after", "Still running at recovery", "Orphans lived (after the kill)", "Kill → state lock free", "Failed runs / retried attempts", "Kill → converged", "Outcome"],
        rows: rounds.map((r) => [
          r.round,
          r.beforeKill,
          r.orphanKinds,
          r.beforeKill === "–" ? "–" : r.orphansAtRecovery,
          r.orphanLives,
          r.beforeKill === "–" ? "–" : r.lockFreedMs === null ? `held at the end (> ${secs(performance.now() - r.killedAt!)})` : secs(r.lockFreedMs),
          `${r.failedRuns} / ${r.retried}`,
          r.recoveryMs !== null ? secs(r.recoveryMs) : "–",
          r.outcome,
        ]),
        notes: [
          "RSS min–max is the first daemon's, from its first apply until its kill.",
          `State lock keys seen: ${lockKeys.join(", ") || "none"}; their sessions: ${lock.sessions().join("; ") || "none"}; held when the scenario ended: ${lockHeldAtEnd ? "yes" : "no"}.`,
          `After the last round the scenario waits up to ${LINGER_MS / 1000} s after that kill for the lock and the orphan tofu to go, to measure how long they last.`,
        ],
      },
    ],
    notes: [...errorSamples(lines, 6).map((s) => `log: ${s}`), ...orphanList.slice(0, 6).map((p) => `orphan: pid ${p.pid} (${p.kind}) ${p.cmd}`)],
    data: { rounds, orphans: orphanList, stillRunningAtEnd: stillRunning, lockKeys, lockHeldAtEnd, rss: mem, leftAfterStop: left },
  };
};
