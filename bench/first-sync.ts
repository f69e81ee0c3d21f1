/**
 * The first sync of a one-task daemon (issue #34: "no slower than CTS's", CTS v0.9.0 measured
 * 1.7 s side by side), A/B: the same one-task-class config (bench/binding-tasks, provider-local)
 * started as an installed cts runs it (`dist/cli/main.js` with its shebang's node flags) from one
 * or more checkouts, alternately, each start in a fresh working dir (so `init` is included) against
 * one Consul dev agent. Not part of `npm run bench` (bench/bindings.ts has the same figure once per
 * run); run `npm run build` in each tree first.
 *
 *   node --conditions=cts-source --import tsx bench/first-sync.ts [--trees=/a,/b] [--n=8] [--cpu-prof=DIR]
 *
 * Prints, per start: spawn → first log line, → `api: listening`, → `applied`; and per tree the
 * median of each. The trees run interleaved (a, b, a, b, …): the machine is shared, and its speed
 * drifts over minutes.
 */
import { spawn } from "node:child_process";
import { mkdir, mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { startConsul, type ConsulAgent } from "../test/support/consul.ts";
import { tools } from "../test/support/tools.ts";
import { shebang } from "./lib/daemon-process.ts";
import { median, sleep } from "./lib/stats.ts";

const arg = (name: string, dflt: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? dflt;
const HERE = fileURLToPath(new URL("..", import.meta.url));
const TREES = arg("trees", HERE).split(",").filter(Boolean);
const N = Number(arg("n", "6"));
const PROF = arg("cpu-prof", "");
const MODULE = process.argv.includes("--module");

interface Start {
  tree: string;
  firstLine: number;
  api: number;
  applied: number;
  marks: Record<string, number>;
}

async function writeConfig(tree: string, consul: ConsulAgent, dir: string, i: number): Promise<string> {
  const tasks = join(tree, "bench/binding-tasks/");
  const t = tools();
  await writeFile(join(dir, "package.json"), JSON.stringify({ type: "module" }));
  const file = join(dir, "cts.config.ts");
  await writeFile(
    file,
    `import { defineConfig, services } from ${JSON.stringify(join(tasks, "pool.ts"))};
import { LocalPool } from ${JSON.stringify(join(tasks, "local-pool.ts"))};
export default defineConfig({
  id: "first-sync-${i}",
  consul: { address: ${JSON.stringify(consul.address)} },
  driver: { terraform: { binary: ${JSON.stringify(t.tofu)}, cliConfigFile: ${JSON.stringify(t.cliConfig)}, workingDir: ${JSON.stringify(join(dir, "sync-tasks"))}, backend: { consul: { path: "cts-bench/first-sync/${i}", gzip: true } } } },
  bufferPeriod: false,
  tasks: [new LocalPool({ name: "pool", path: ${JSON.stringify(join(dir, "members.txt"))}, condition: services({ names: ["first-sync"] }) })],
});
`,
  );
  return file;
}

/** Log lines whose time after the spawn is worth printing. */
const MARKS: Array<[string, RegExp]> = [
  ["api", /api: listening/],
  ["watching", /watching|watch.*started/i],
  ["init", /terraform init|running init|init\b.*(done|finished)/i],
  ["applied", /task 'pool': (applied|failed)/],
];

async function startOnce(tree: string, consul: ConsulAgent, root: string, i: number): Promise<Start> {
  const dir = join(root, `start-${i}`);
  await mkdir(dir, { recursive: true });
  const file = await writeConfig(tree, consul, dir, i);
  const bin = join(tree, "dist/cli/main.js");
  const { flags, env } = shebang(bin);
  const prof = PROF ? ["--cpu-prof", `--cpu-prof-dir=${join(PROF, `${i}-${tree.replace(/\W+/g, "_")}`)}`] : [];
  const t0 = performance.now();
  const child = spawn(process.execPath, [...flags, ...prof, bin, "watch", "--no-buffer", "--config", file, "--log-level", "debug", "--api-port", "0"], { cwd: dir, env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
  const marks: Record<string, number> = {};
  let first = 0;
  const lines: string[] = [];
  await new Promise<void>((resolve, reject) => {
    let buf = "";
    const timer = setTimeout(() => reject(new Error(`no applied line in 60 s:\n${lines.slice(-20).join("\n")}`)), 60_000);
    const onData = (d: Buffer) => {
      const t = performance.now() - t0;
      buf += d.toString("utf8");
      let k: number;
      while ((k = buf.indexOf("\n")) >= 0) {
        const line = buf.slice(0, k);
        buf = buf.slice(k + 1);
        lines.push(`${t.toFixed(0).padStart(5)} ${line}`);
        first ||= t;
        for (const [name, re] of MARKS) if (marks[name] === undefined && re.test(line)) marks[name] = t;
        if (marks.applied !== undefined) {
          clearTimeout(timer);
          resolve();
        }
      }
    };
    child.stdout!.on("data", onData);
    child.stderr!.on("data", onData);
    child.on("exit", (code) => reject(new Error(`exited ${code}:\n${lines.slice(-20).join("\n")}`)));
  });
  child.kill("SIGTERM");
  await new Promise((r) => child.once("exit", r));
  if (process.argv.includes("--lines")) console.log(lines.join("\n"));
  return { tree, firstLine: first, api: marks.api ?? NaN, applied: marks.applied!, marks };
}

async function main() {
  const consul = await startConsul();
  await consul.register({ Name: "first-sync", ID: "first-sync-0", Address: "10.9.0.1", Port: 8080, Meta: { version: "0" } });
  const root = await mkdtemp(join(tmpdir(), "cts-first-sync-"));
  const starts: Start[] = [];
  try {
    // One start per tree first, not counted: the page cache and tsx's compile cache warmed, as after a restart.
    let i = 0;
    for (const tree of TREES) await startOnce(tree, consul, root, i++);
    for (let r = 0; r < N; r++)
      for (const tree of r % 2 ? [...TREES].reverse() : TREES) {
        const s = await startOnce(tree, consul, root, i++);
        starts.push(s);
        console.log(`${tree}: first line ${s.firstLine.toFixed(0)} ms, api ${s.api.toFixed(0)} ms, applied ${s.applied.toFixed(0)} ms`);
        await sleep(500);
      }
  } finally {
    await consul.stop();
  }
  for (const tree of TREES) {
    const mine = starts.filter((s) => s.tree === tree);
    const m = (f: (s: Start) => number) => median(mine.map(f)).toFixed(0);
    console.log(`${tree}: n=${mine.length} median first line ${m((s) => s.firstLine)} ms, api ${m((s) => s.api)} ms, applied ${m((s) => s.applied)} ms (min ${Math.min(...mine.map((s) => s.applied)).toFixed(0)}, max ${Math.max(...mine.map((s) => s.applied)).toFixed(0)})`);
  }
}

await main();
