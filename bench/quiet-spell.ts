/**
 * Where a change after a quiet spell loses its time (issue #34: "a change after ≥ 10 minutes of
 * quiet ≤ 1.2× the back-to-back p50"). Not part of `npm run bench`: run it alone, it sleeps.
 *
 *   node --conditions=cts-source --import tsx bench/quiet-spell.ts [--quiet=180] [--cycles=6] [--back=5] [--noflush] [--out=FILE]
 *
 * Probes, each timed back to back and then once after every quiet spell, the one that goes first
 * after the spell rotating from cycle to cycle (whatever wakes up a shared part — the Consul agent,
 * the VM — is paid by the first probe only):
 * - `daemon`: a `cts watch --no-buffer` as installed (dist/, `npm run build` first) with one
 *   provider-local task class: change → `applied` line; its debug lines (Terraform's own lines with
 *   the daemon's timestamps) are kept for the phases;
 * - `tofu`: `tofu apply` of the same kind of root module (a local_file, Consul backend with gzip)
 *   in a prepared working dir, by hand, with `TF_LOG=trace` written to a file per run: where inside
 *   OpenTofu the time goes (config load, state read from Consul, lock, provider start, apply, state
 *   write, unlock);
 * - `consul`: one KV GET to the agent (its HTTP answer after a quiet spell);
 * - `spawn`: `/bin/true` started and reaped (fork/exec after a quiet spell);
 * - `consul-write`: what OpenTofu's Consul backend asks of the agent around a run (a session, a KV
 *   acquire with it, a state-sized write, a release, the session destroyed): the agent's write path;
 * - `node-read`: the `node` binary read through (`cat node > /dev/null`): whether the host took back
 *   the page cache of the daemon's own executable, which the page warmer does not read;
 * - with `--noflush`, `daemon-noflush`: a second daemon like the first whose node runs with
 *   `--no-flush-bytecode` (whether V8 dropping the bytecode of the run's code while idle matters).
 * The figures go to stdout (and `--out`) as JSON lines, then a summary per probe.
 */
import { execFile, spawn } from "node:child_process";
import { mkdir, mkdtemp, readFile, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { startConsul, type ConsulAgent } from "../test/support/consul.ts";
import { tools } from "../test/support/tools.ts";
import { startDaemonProcess } from "./lib/daemon-process.ts";
import { phaseReader } from "./lib/phases.ts";
import { median, sleep } from "./lib/stats.ts";

const run$ = promisify(execFile);
const TASKS = fileURLToPath(new URL("./binding-tasks/", import.meta.url));
const arg = (name: string, dflt: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? dflt;
const QUIET_S = Number(arg("quiet", "180"));
const CYCLES = Number(arg("cycles", "6"));
const BACK = Number(arg("back", "5"));
const OUT = arg("out", "");

type Probe = "daemon" | "daemon-noflush" | "tofu" | "consul" | "spawn" | "consul-write" | "node-read";
// `--noflush`: a second daemon whose node runs with --no-flush-bytecode (V8 keeps the bytecode of
// functions unused for a while, which it otherwise drops after a few idle-time collections).
const NOFLUSH = process.argv.includes("--noflush");
// `--probes=a,b,…`: these probes in this order (the first goes first after the first spell).
const PROBES: Probe[] = arg("probes", "")
  ? (arg("probes", "").split(",") as Probe[])
  : NOFLUSH
    ? ["daemon", "tofu", "daemon-noflush", "consul", "spawn"]
    : ["daemon", "tofu", "consul", "spawn"];

interface Sample {
  probe: Probe;
  kind: "back" | "quiet";
  cycle: number;
  order: number;
  ms: number;
  phases?: Record<string, number>;
}
const samples: Sample[] = [];
const emit = (s: Sample) => {
  samples.push(s);
  const line = JSON.stringify(s);
  console.log(line);
  if (OUT) void writeFile(OUT, samples.map((x) => JSON.stringify(x)).join("\n") + "\n");
};

async function daemonLane(consul: ConsulAgent, dir: string, label = "daemon", nodeArgs: string[] = []) {
  await mkdir(dir, { recursive: true });
  const file = join(dir, "cts.config.ts");
  await writeFile(join(dir, "package.json"), JSON.stringify({ type: "module" }));
  await writeFile(
    file,
    `import { defineConfig, services } from ${JSON.stringify(join(TASKS, "pool.ts"))};
import { LocalPool } from ${JSON.stringify(join(TASKS, "local-pool.ts"))};
export default defineConfig({
  id: "quiet-${label}",
  consul: { address: ${JSON.stringify(consul.address)} },
  driver: { terraform: { binary: ${JSON.stringify(tools().tofu)}, cliConfigFile: ${JSON.stringify(tools().cliConfig)}, workingDir: ${JSON.stringify(join(dir, "sync-tasks"))}, backend: { consul: { path: "cts-bench/quiet/${label}", gzip: true } } } },
  bufferPeriod: false,
  tasks: [new LocalPool({ name: "pool", path: ${JSON.stringify(join(dir, "members.txt"))}, condition: services({ names: ["quiet-${label}"] }) })],
});
`,
  );
  const service = `quiet-${label}`;
  await consul.register({ Name: service, ID: `${service}-0`, Address: "10.9.0.1", Port: 8080, Meta: { version: "0" } });
  const daemon = startDaemonProcess(file, { cwd: dir, built: true, nodeArgs });
  const metrics = phaseReader();
  await daemon.waitForLine(/task 'pool': (applied|failed)/, 180_000, { seen: true });
  let rev = 1;
  return {
    daemon,
    async change(): Promise<{ ms: number; phases: Record<string, number> }> {
      const p = daemon.waitForLine(/task 'pool': (applied|failed)/, 120_000);
      const t0 = performance.now();
      await consul.register({ Name: service, ID: `${service}-0`, Address: "10.9.0.1", Port: 8080, Meta: { version: String(rev++) } });
      const r = await p;
      if (!/ applied/.test(r.line)) throw new Error(r.line);
      return { ms: r.t - t0, phases: await metrics(daemon) };
    },
  };
}

async function tofuLane(consul: ConsulAgent, dir: string) {
  const t = tools();
  await mkdir(dir, { recursive: true });
  const main = (content: string) =>
    JSON.stringify({
      terraform: { backend: { consul: { address: consul.address, scheme: "http", path: "cts-bench/quiet/tofu", gzip: true } }, required_providers: { local: { source: "hashicorp/local" } } },
      provider: { local: [{}] },
      resource: { local_file: { members: { filename: join(dir, "members.txt"), content } } },
    });
  const env = { ...process.env, TF_CLI_CONFIG_FILE: t.cliConfig, TF_IN_AUTOMATION: "1", CHECKPOINT_DISABLE: "1" };
  await writeFile(join(dir, "main.tf.json"), main("0\n"));
  await run$(t.tofu, ["init", "-input=false", "-no-color"], { cwd: dir, env });
  await run$(t.tofu, ["apply", "-auto-approve", "-input=false", "-no-color"], { cwd: dir, env });
  let rev = 1;
  return async (label: string): Promise<{ ms: number; phases: Record<string, number> }> => {
    await writeFile(join(dir, "main.tf.json"), main(`${rev++}\n`));
    const logPath = join(dir, `trace-${label}.log`);
    const t0 = performance.now();
    const wall0 = Date.now();
    await run$(t.tofu, ["apply", "-auto-approve", "-input=false", "-no-color", "-json"], { cwd: dir, env: { ...env, TF_LOG: "trace", TF_LOG_PATH: logPath }, maxBuffer: 64 * 1024 * 1024 });
    const ms = performance.now() - t0;
    return { ms, phases: tracePhases(await readFile(logPath, "utf8"), wall0, label) };
  };
}

/** Milliseconds from the process's spawn to the first trace line matching each marker, and the biggest gaps between lines. */
const MARKERS: Array<[string, RegExp]> = [
  ["first-line", /./],
  ["lock-session", /created consul lock session/],
  ["state-read", /reading remote state for workspace/],
  ["plugin-started", /provider: plugin started/],
  ["plugin-rpc", /provider: using plugin/],
  ["apply-start", /Starting apply for/],
];
const gaps: Record<string, Array<{ ms: number; before: string; after: string }>> = {};
function tracePhases(text: string, wall0: number, label: string): Record<string, number> {
  const lines = text.split("\n").filter((l) => /^\d{4}-/.test(l));
  const at = (l: string) => {
    const m = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+)(Z|[+-]\d\d:?\d\d)/.exec(l);
    return m ? Date.parse(m[1]!.slice(0, 23) + m[2]) - wall0 : NaN;
  };
  const out: Record<string, number> = {};
  for (const [name, re] of MARKERS) {
    const l = lines.find((x) => re.test(x));
    if (l) out[name] = at(l);
  }
  if (lines.length) out["last-line"] = at(lines[lines.length - 1]!);
  const g: Array<{ ms: number; before: string; after: string }> = [];
  for (let i = 1; i < lines.length; i++) {
    const d = at(lines[i]!) - at(lines[i - 1]!);
    if (d >= 8) g.push({ ms: d, before: lines[i - 1]!.slice(24, 140), after: lines[i]!.slice(24, 140) });
  }
  gaps[label] = g.sort((x, y) => y.ms - x.ms).slice(0, 8);
  return out;
}

async function consulProbe(consul: ConsulAgent): Promise<number> {
  const t0 = performance.now();
  await consul.api("GET", "/v1/kv/cts-bench/quiet/probe?stale");
  return performance.now() - t0;
}
async function consulWriteProbe(consul: ConsulAgent): Promise<number> {
  const t0 = performance.now();
  const { ID } = await consul.api("PUT", "/v1/session/create", { Name: "quiet-probe", TTL: "15s" });
  await consul.api("PUT", `/v1/kv/cts-bench/quiet/probe-lock?acquire=${ID}`, "lock");
  await consul.api("PUT", "/v1/kv/cts-bench/quiet/probe-state", "x".repeat(4096));
  await consul.api("PUT", `/v1/kv/cts-bench/quiet/probe-lock?release=${ID}`, "lock");
  await consul.api("PUT", `/v1/session/destroy/${ID}`);
  return performance.now() - t0;
}
async function readProbe(file: string): Promise<number> {
  const t0 = performance.now();
  await run$("sh", ["-c", 'cat "$1" > /dev/null', "sh", file]);
  return performance.now() - t0;
}
async function spawnProbe(): Promise<number> {
  const t0 = performance.now();
  await new Promise<void>((resolve, reject) => spawn("/bin/true").on("exit", () => resolve()).on("error", reject));
  return performance.now() - t0;
}

async function main() {
  const consul = await startConsul();
  const root = await mkdtemp(join(tmpdir(), "cts-quiet-"));
  await consul.api("PUT", "/v1/kv/cts-bench/quiet/probe", "x");
  const d = await daemonLane(consul, join(root, "daemon"));
  if (PROBES.includes("consul-write")) await consulWriteProbe(consul);
  const dn = NOFLUSH ? await daemonLane(consul, join(root, "daemon-noflush"), "daemon-noflush", ["--no-flush-bytecode"]) : undefined;
  const tofu = await tofuLane(consul, join(root, "tofu"));
  let n = 0;
  // Stopped early (SIGINT/SIGTERM): the daemons and the agent end with it, and the summary is printed.
  let stopping = false;
  const stop = () => (stopping = true);
  process.once("SIGINT", stop).once("SIGTERM", stop);
  const probe = async (p: Probe, kind: "back" | "quiet", cycle: number, order: number) => {
    if (p === "daemon" || p === "daemon-noflush") {
      const r = await (p === "daemon" ? d : dn!).change();
      emit({ probe: p, kind, cycle, order, ms: r.ms, phases: r.phases });
    } else if (p === "tofu") {
      const r = await tofu(`${kind}-${cycle}-${n++}`);
      emit({ probe: p, kind, cycle, order, ms: r.ms, phases: r.phases });
    } else if (p === "consul") emit({ probe: p, kind, cycle, order, ms: await consulProbe(consul) });
    else if (p === "consul-write") emit({ probe: p, kind, cycle, order, ms: await consulWriteProbe(consul) });
    else if (p === "node-read") emit({ probe: p, kind, cycle, order, ms: await readProbe(process.execPath) });
    else emit({ probe: p, kind, cycle, order, ms: await spawnProbe() });
  };
  try {
    for (let c = 0; c < CYCLES && !stopping; c++) {
      for (let i = 0; i < BACK; i++)
        for (const p of PROBES) {
          await probe(p, "back", c, -1);
          await sleep(200);
        }
      for (let waited = 0; waited < QUIET_S && !stopping; waited++) await sleep(1000);
      if (stopping) break;
      const order = [...PROBES.slice(c % PROBES.length), ...PROBES.slice(0, c % PROBES.length)];
      for (const [i, p] of order.entries()) await probe(p, "quiet", c, i);
    }
  } finally {
    if (OUT) await writeFile(OUT.replace(/(\.\w+)?$/, ".daemon.log"), [...d.daemon.lines(), "--- noflush", ...(dn?.daemon.lines() ?? [])].join("\n") + "\n");
    await d.daemon.stop();
    await dn?.daemon.stop();
    await consul.stop();
  }
  for (const p of PROBES) {
    const back = median(samples.filter((s) => s.probe === p && s.kind === "back").map((s) => s.ms));
    const first = samples.filter((s) => s.probe === p && s.kind === "quiet" && s.order === 0).map((s) => s.ms);
    const later = samples.filter((s) => s.probe === p && s.kind === "quiet" && s.order > 0).map((s) => s.ms);
    console.log(`${p}: back to back p50 ${back.toFixed(1)} ms; after ${QUIET_S} s quiet, first probe ${first.map((x) => x.toFixed(0)).join(", ")} ms; not first ${later.map((x) => x.toFixed(0)).join(", ")} ms`);
  }
  console.log(`traces in ${root}`);
  if (OUT) await writeFile(OUT.replace(/(\.\w+)?$/, ".gaps.json"), JSON.stringify(gaps, null, 1));
}

await main();
