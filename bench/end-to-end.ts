/**
 * 2. End to end: a registration → `tofu apply` finished, for a one-resource task, against the same
 * `tofu apply` run by hand on the same files. Also: what skipping `init` and the no-op skip save.
 */
import { mkdir, readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { startConsul } from "../test/support/consul.ts";
import { runTofu } from "../test/support/tofu.ts";
import { INIT_MARKER, MAIN_FILE } from "../src/terraform/working-dir.ts";
import { lit, writeBenchConfig } from "./lib/config.ts";
import { startBenchDaemon } from "./lib/daemon.ts";
import { median, ms, ratio, rounded, sleep, summarize } from "./lib/stats.ts";
import type { BenchContext, BenchFn, ResultTable, TargetCheck } from "./lib/types.ts";

const TASK = "e2e";
const RATIO_TARGET = 1.2;

async function bench(ctx: BenchContext, samples: number, initSamples: number, withHand: boolean) {
  const consul = await startConsul();
  ctx.onCleanup(() => consul.stop());
  await consul.register({ Name: "e2e", ID: "e2e-0", Address: "10.5.5.5", Port: 5000, Meta: { rev: "0" } });
  const file = await writeBenchConfig({
    dir: ctx.tmp,
    consulAddress: consul.address,
    tasks: [`new MemberFile({ name: ${lit(TASK)}, path: ${lit(join(ctx.tmp, "members.txt"))}, condition: services({ names: ["e2e"] }) })`],
  });
  const d = await startBenchDaemon(file, { driver: "real" });
  ctx.onCleanup(() => d.close());
  const first = await d.rec.next(TASK, "outcome", () => true, 120_000);
  if (first.outcome !== "applied") throw new Error(`the first run ended '${first.outcome}': ${d.problems.join("; ")}`);
  const dir = join(d.loaded.dir, "sync-tasks", TASK);
  // init and `workspace select` refuse to run with TF_WORKSPACE set; apply runs in the task's workspace.
  const byHand = (args: string[]) => runTofu(dir, args, { ...(args[0] === "apply" ? { TF_WORKSPACE: TASK } : {}), CONSUL_HTTP_ADDR: consul.address });
  const timedHand = async (args: string[]) => {
    const t0 = performance.now();
    const res = await byHand(args);
    if (res.exitCode !== 0) throw new Error(`tofu ${args[0]} by hand failed: ${res.stderr || res.stdout}`);
    return { ms: performance.now() - t0, out: res.stdout };
  };

  const ours: Array<{ total: number; trigger: number; driver: number }> = [];
  const hand: number[] = [];
  const noop: number[] = [];
  const handNoop: number[] = [];
  let prevJson = await readFile(join(dir, MAIN_FILE), "utf8");
  ctx.window.begin();
  for (let i = 1; i <= samples; i++) {
    // Ours: a registration until the apply has finished.
    await sleep(200);
    const id = `e2e-${i}`;
    const has = (m: { json?: string }) => (m.json ?? "").includes(` ${id} `);
    const handoff = d.rec.next(TASK, "handoff", has, 60_000);
    const applied = d.rec.next(TASK, "applied", has, 60_000);
    const t0 = performance.now();
    await consul.register({ Name: "e2e", ID: id, Address: "10.5.5.5", Port: 5000 + i, Meta: { rev: "0" } });
    const h = await handoff;
    const a = await applied;
    if (a.initialized) throw new Error("a warm run ran init: the init skip did not work");
    ours.push({ total: a.t - t0, trigger: h.t - t0, driver: a.t - h.t });
    const json = a.json!;

    if (withHand) {
      // By hand: the previous JSON back into the same folder, then the same kind of apply
      // (one local_file replaced), with the same workspace, backend and CLI config.
      await d.controller.idle();
      await writeFile(join(dir, MAIN_FILE), prevJson);
      const r = await timedHand(["apply", "-auto-approve", "-input=false", "-lock=true"]);
      if (!/1 added, 0 changed, 1 destroyed/.test(r.out)) throw new Error(`the hand apply did not replace the file: ${r.out.slice(-300)}`);
      hand.push(r.ms);

      // The no-op skip: a change the task does not render (instance meta) → synthesized JSON
      // equal to the last applied → no Terraform at all.
      await sleep(200);
      const outcome = d.rec.next(TASK, "outcome", () => true, 60_000);
      const t1 = performance.now();
      await consul.register({ Name: "e2e", ID: "e2e-0", Address: "10.5.5.5", Port: 5000, Meta: { rev: String(i) } });
      const o = await outcome;
      if (o.outcome !== "no-op") throw new Error(`a meta-only change ended '${o.outcome}', expected no-op`);
      noop.push(o.t - t1);
      // What that run would have cost without the skip: an apply with nothing to change.
      const n = await timedHand(["apply", "-auto-approve", "-input=false", "-lock=true"]);
      if (!/No changes/.test(n.out)) throw new Error(`the no-op apply by hand changed something: ${n.out.slice(-300)}`);
      handNoop.push(n.ms);
    }
    prevJson = json;
  }
  ctx.window.end();

  // Cold runs: the init marker removed, so the driver runs init (and selects the workspace) first.
  const cold: number[] = [];
  for (let j = 1; j <= initSamples; j++) {
    await sleep(200);
    await d.controller.idle();
    await rm(join(dir, INIT_MARKER), { force: true });
    const id = `e2e-cold-${j}`;
    const applied = d.rec.next(TASK, "applied", (m) => (m.json ?? "").includes(` ${id} `), 60_000);
    const t0 = performance.now();
    await consul.register({ Name: "e2e", ID: id, Address: "10.5.5.5", Port: 6000 + j });
    const a = await applied;
    if (!a.initialized) throw new Error("the cold run did not run init");
    cold.push(a.t - t0);
  }
  // What those cold runs add, by hand: init, then selecting the workspace.
  const handInit: number[] = [];
  for (let j = 1; j <= initSamples; j++) {
    const i1 = await timedHand(["init", "-input=false", "-no-color"]);
    const i2 = await timedHand(["workspace", "select", "-no-color", TASK]);
    handInit.push(i1.ms + i2.ms);
  }
  return { ours, hand, noop, handNoop, cold, handInit, problems: d.problems };
}

/**
 * Change → applied with warm providers off and on, in one run: a fresh daemon and working dir
 * for each (same Consul agent), the same registrations; also the pool's resident memory.
 */
async function warmComparison(ctx: BenchContext, samples: number) {
  const consul = await startConsul();
  ctx.onCleanup(() => consul.stop());
  await consul.register({ Name: "warm", ID: "warm-0", Address: "10.5.5.5", Port: 5000 });
  const out: Record<"off" | "on", number[]> = { off: [], on: [] };
  let poolRssMb: number | undefined;
  let poolProcesses = 0;
  for (const mode of ["off", "on"] as const) {
    const dir = join(ctx.tmp, `warm-${mode}`);
    await mkdir(dir, { recursive: true });
    const file = await writeBenchConfig({
      dir,
      consulAddress: consul.address,
      backendPath: `cts-bench/warm-${mode}`,
      tasks: [`new MemberFile({ name: ${lit(TASK)}, path: ${lit(join(dir, "members.txt"))}, condition: services({ names: ["warm"] }) })`],
    });
    const d = await startBenchDaemon(file, { driver: "real", warmProviders: mode === "on" });
    try {
      const first = await d.rec.next(TASK, "outcome", () => true, 120_000);
      if (first.outcome !== "applied") throw new Error(`warm ${mode}: the first run ended '${first.outcome}': ${d.problems.join("; ")}`);
      for (let i = 1; i <= samples; i++) {
        await sleep(200);
        const id = `warm-${mode}-${i}`;
        const applied = d.rec.next(TASK, "applied", (m) => (m.json ?? "").includes(` ${id} `), 60_000);
        const t0 = performance.now();
        await consul.register({ Name: "warm", ID: id, Address: "10.5.5.5", Port: 5000 + i });
        out[mode].push((await applied).t - t0);
      }
      if (mode === "on") {
        const procs = d.warmProcesses();
        poolProcesses = procs.length;
        poolRssMb = procs.reduce((sum, p) => sum + (p.rssMb ?? 0), 0);
        if (procs.length === 0) throw new Error("warm providers on, but no warm provider process is running");
      }
    } finally {
      await d.close();
    }
  }
  return { off: summarize(out.off), on: summarize(out.on), poolRssMb, poolProcesses };
}

export const run: BenchFn = async (ctx) => {
  const warm = await warmComparison(ctx, ctx.sizes.e2eSamples);
  const { ours, hand, noop, handNoop, cold, handInit, problems } = await bench(ctx, ctx.sizes.e2eSamples, ctx.sizes.e2eInitSamples, true);
  const total = summarize(ours.map((o) => o.total));
  const handS = summarize(hand);
  const r = total.p50 / handS.p50;
  const main: ResultTable = {
    title: "Register → apply finished (one local_file replaced)",
    columns: ["Path", "n", "p50", "p95", "max"],
    rows: [
      ["cts: Consul write → apply finished", total.n, ms(total.p50), ms(total.p95), ms(total.max)],
      ["… of which: write → JSON handed to the driver", total.n, ms(median(ours.map((o) => o.trigger))), "", ""],
      ["… of which: driver (write files, `tofu apply -json`)", total.n, ms(median(ours.map((o) => o.driver))), "", ""],
      ["by hand: `tofu apply -auto-approve` on the same files", handS.n, ms(handS.p50), ms(handS.p95), ms(handS.max)],
      ["**ratio cts / by hand (medians)**", "", ratio(r), "", ""],
    ],
  };
  const coldS = summarize(cold);
  const noopS = summarize(noop);
  const handInitS = summarize(handInit);
  const handNoopS = summarize(handNoop);
  const skips: ResultTable = {
    title: "What the skips save (medians)",
    columns: ["Case", "n", "cts", "without the skip", "saved per run"],
    rows: [
      ["init skipped (init inputs unchanged) vs a run that inits and selects the workspace first", `${total.n} / ${coldS.n}`, ms(total.p50), ms(coldS.p50), ms(coldS.p50 - total.p50)],
      ["… the same by hand: `tofu init` + `tofu workspace select`", handInitS.n, "0", ms(handInitS.p50), ms(handInitS.p50)],
      ["no-op skip: a change the task does not render (instance meta) → JSON hash equal → no Terraform", `${noopS.n} / ${handNoopS.n}`, ms(noopS.p50), `${ms(handNoopS.p50)} (an apply with nothing to change)`, ms(handNoopS.p50 - noopS.p50)],
    ],
  };
  const targets: TargetCheck[] = [
    {
      id: "e2e.ratio",
      what: "End to end: register → apply finished, against `tofu apply` by hand",
      target: `≤ ${RATIO_TARGET}×`,
      actual: `${ratio(r)} (${ms(total.p50)} vs ${ms(handS.p50)})`,
      met: r <= RATIO_TARGET,
    },
  ];
  if (r > RATIO_TARGET) targets[0]!.why = `cts adds ${ms(total.p50 - handS.p50)} to the apply: ${ms(median(ours.map((o) => o.trigger)))} until the driver has the JSON, the rest in the driver (files, \`-json\` output parsing); see the profile.`;
  return {
    title: "End to end",
    method: `One MemberFile task (one local_file) with the real driver and the Consul state backend (warm providers off for the comparison with the hand-run apply; the warm table runs a fresh daemon with them off, then on). Each round registers one more instance and times the write → \`tofu apply\` finished (the driver's promise resolves); then, in the same working dir, workspace and CLI config, it writes the previous JSON back and times \`tofu apply -auto-approve -input=false -lock=true\` by hand (the same replace of one file). ${ctx.sizes.e2eSamples} rounds; ${ctx.sizes.e2eInitSamples} cold runs with the init marker removed.`,
    tables: [
      main,
      skips,
      {
        title: "Warm providers: change → applied (one local_file replaced), off and on in one run",
        columns: ["warmProviders", "n", "p50", "p99", "max"],
        rows: [
          ["off (Terraform launches hashicorp/local every run)", warm.off.n, ms(warm.off.p50), ms(warm.off.p99), ms(warm.off.max)],
          ["on (reattached through TF_REATTACH_PROVIDERS)", warm.on.n, ms(warm.on.p50), ms(warm.on.p99), ms(warm.on.max)],
          ["**saved per run (p50)**", "", ms(warm.off.p50 - warm.on.p50), "", ""],
          [`pool: ${warm.poolProcesses} process(es), resident memory`, "", `${warm.poolRssMb ?? "?"} MB`, "", ""],
        ],
      },
    ],
    targets,
    notes: [
      "cts runs `apply -json` (it reads the JSON event stream for the summary); by hand is the human-readable form.",
      "The no-op skip means out-of-band drift is not corrected by a catalog event that does not change the JSON (see DESIGN.md: drift is a scheduled plan's job).",
      ...(problems.length ? [`Daemon warnings: ${problems.slice(0, 3).join(" | ")}`] : []),
    ],
    data: {
      ours: rounded(total),
      trigger: rounded(summarize(ours.map((o) => o.trigger))),
      driver: rounded(summarize(ours.map((o) => o.driver))),
      byHand: rounded(handS),
      ratio: Math.round(r * 1000) / 1000,
      coldWithInit: rounded(coldS),
      initAndSelectByHand: rounded(handInitS),
      noopSkip: rounded(noopS),
      noopApplyByHand: rounded(handNoopS),
      warmOff: rounded(warm.off),
      warmOn: rounded(warm.on),
      warmPoolRssMb: warm.poolRssMb,
      warmPoolProcesses: warm.poolProcesses,
    },
  };
};

/** A few warm runs under the profiler (the cts side: Terraform is a separate process). */
export const profile: BenchFn = async (ctx) => {
  await bench(ctx, Math.min(6, ctx.sizes.e2eSamples), 0, false);
  return { title: "e2e profile", method: "end to end, warm runs (the cts process only)", tables: [], targets: [], notes: [], data: {} };
};
