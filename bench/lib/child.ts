/**
 * Runs one benchmark in its own process, so cdktf's global token map, the heap and any crash stay
 * inside it: `node --import tsx bench/lib/child.ts <module> <context.json> <result.json> [profile]`.
 * With `profile`, runs the module's `profile` workload instead (the runner adds --cpu-prof).
 */
import { readFileSync, writeFileSync } from "node:fs";
import type { BenchContext, BenchFn } from "./types.ts";

const [moduleName, ctxFile, resultFile, mode] = process.argv.slice(2);
if (!moduleName || !ctxFile || !resultFile) {
  process.stderr.write("usage: child.ts <module> <context.json> <result.json> [profile]\n");
  process.exit(2);
}
const input = JSON.parse(readFileSync(ctxFile, "utf8")) as Omit<BenchContext, "log" | "onCleanup" | "window">;
const cleanups: Array<() => Promise<void> | void> = [];
const label = moduleName.replace(/\.ts$/, "");
const nowUs = () => Number(process.hrtime.bigint() / 1000n);
let windowUs: [number, number] | undefined;
const ctx: BenchContext = {
  ...input,
  window: {
    begin: () => void (windowUs ??= [nowUs(), Infinity]),
    end: () => void (windowUs && (windowUs[1] = nowUs())),
  },
  log: (m) => process.stderr.write(`[${new Date().toISOString().slice(11, 19)}] [${label}] ${m}\n`),
  onCleanup: (fn) => cleanups.unshift(fn),
};

let cleaning: Promise<void> | undefined;
const cleanup = () =>
  (cleaning ??= (async () => {
    for (const fn of cleanups.splice(0)) {
      try {
        await fn();
      } catch (err) {
        ctx.log(`cleanup failed: ${String(err)}`);
      }
    }
  })());

for (const sig of ["SIGTERM", "SIGINT"] as const) {
  process.once(sig, () => {
    ctx.log(`${sig}: stopping Consul and everything else this benchmark started`);
    void cleanup().finally(() => process.exit(130));
  });
}

const mod = (await import(`../${moduleName}`)) as { run: BenchFn; profile?: BenchFn };
const fn = mode === "profile" ? mod.profile : mod.run;
if (!fn) throw new Error(`${moduleName} has no ${mode === "profile" ? "profile" : "run"} export`);
const start = performance.now();
let code = 0;
try {
  const result = await fn(ctx);
  if (windowUs && !Number.isFinite(windowUs[1])) windowUs[1] = nowUs();
  writeFileSync(resultFile, JSON.stringify({ ...result, name: label, durationMs: performance.now() - start, ...(windowUs ? { profileWindowUs: windowUs } : {}) }, null, 2));
} catch (err) {
  ctx.log(`FAILED: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
  writeFileSync(resultFile, JSON.stringify({ name: label, error: err instanceof Error ? err.message : String(err), durationMs: performance.now() - start }));
  code = 1;
} finally {
  await cleanup();
}
// process.exit (not a natural end) so --cpu-prof still writes its file while keep-alive sockets or
// timers of the code under test would otherwise hold the process open.
process.exit(code);
