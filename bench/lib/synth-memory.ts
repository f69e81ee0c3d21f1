import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { loadConfig } from "../../src/config/load.ts";
import { inProcessSynthesizer, workerSynthesizer } from "../../src/synth/synthesizer.ts";
import { syntheticInstances } from "./catalog.ts";
import { lit, writeBenchConfig } from "./config.ts";
import { bytes } from "./stats.ts";
import type { BenchContext } from "./types.ts";

const gc = (globalThis as { gc?: () => void }).gc;

/** RSS series of consecutive syntheses. */
export interface SynthMemory {
  worker: Array<{ n: number; rss: number }>;
  recycled: number;
  inProcess: Array<{ n: number; rss: number }>;
  resources: number;
}

/**
 * Synthesizes a ChainedFiles task (50 resources referencing each other: cdktf tokens) `count` times
 * through the daemon's worker synthesizer, sampling this process's RSS every 100, then
 * `inProcessCount` times on the main thread (as `cts synth` and `once` do).
 */
export async function synthMemory(ctx: BenchContext, count: number, inProcessCount: number): Promise<SynthMemory> {
  const dir = join(ctx.tmp, "synth");
  await mkdir(dir, { recursive: true });
  const file = await writeBenchConfig({
    dir,
    consulAddress: "127.0.0.1:1",
    tasks: [`new ChainedFiles({ name: "chain", path: ${lit(join(dir, "files"))}, condition: services({ names: ["syn"] }) })`],
  });
  const input = { services: syntheticInstances(50) };
  const ref = { kind: "config" as const, configFile: file, name: "chain" };
  const rss = () => {
    gc?.();
    return process.memoryUsage().rss;
  };
  // The daemon's synthesizer with its defaults (tokens forgotten after each synthesis; replaced past 128 MiB over its baseline).
  const worker = workerSynthesizer();
  const workerSeries: Array<{ n: number; rss: number }> = [];
  let resources = 0;
  for (let i = 1; i <= count; i++) {
    const r = await worker.synth(ref, input, {});
    resources = r.resources;
    if (i % 100 === 0) workerSeries.push({ n: i, rss: rss() });
  }
  const recycled = worker.recycled();
  await worker.close();
  ctx.log(`worker: RSS ${bytes(workerSeries[0]?.rss ?? NaN)} after 100, ${bytes(workerSeries.at(-1)?.rss ?? NaN)} after ${count}; ${recycled} recycles`);
  // The same task synthesized on this thread, as cts synth and once do.
  const loaded = await loadConfig(file);
  const inProc = inProcessSynthesizer((name) => loaded.config.tasks.find((t) => t.name === name));
  const inSeries: Array<{ n: number; rss: number }> = [{ n: 0, rss: rss() }];
  for (let i = 1; i <= inProcessCount; i++) {
    await inProc.synth(ref, input, {});
    if (i % 50 === 0) inSeries.push({ n: i, rss: rss() });
  }
  ctx.log(`in process: RSS ${bytes(inSeries[0]!.rss)} → ${bytes(inSeries.at(-1)!.rss)} after ${inProcessCount}`);
  return { worker: workerSeries, recycled, inProcess: inSeries, resources };
}

