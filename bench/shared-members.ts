/**
 * Shared cluster mode on this machine: 50 cheap tasks (terraform_data + local-exec) applied by 1
 * member, then by 2 members (real Consul, real OpenTofu, real `cts watch` processes). Measures the
 * time from the first owner lock taken to the last task applied. On a 2-core machine shared with
 * other work, a second member mostly competes for the same cores: the number says how much of a
 * run is waiting (Consul, process start-up) rather than CPU.
 *
 *   node --import tsx bench/shared-members.ts [--tasks=50]
 *
 * Appends its table to bench/results/shared-members.md.
 */
import { readFile, writeFile } from "node:fs/promises";
import { cpus, loadavg } from "node:os";
import { join } from "node:path";
import { startConsul } from "../test/support/consul.ts";
import { tempDir, waitFor } from "../test/support/cts.ts";
import { startCtsProcess, writeHaConfig, type CtsProcess } from "../test/support/cts-process.ts";

const TASKS = Number(process.argv.find((a) => a.startsWith("--tasks="))?.split("=")[1] ?? 50);
const names = Array.from({ length: TASKS }, (_, i) => `b-${String(i).padStart(3, "0")}`);

async function round(members: number): Promise<{ members: number; seconds: number; perMember: number[]; load: number }> {
  const consul = await startConsul({ extraConfig: 'session_ttl_min = "1s"' });
  const tmp = await tempDir("cts-bench-shared-");
  const procs: CtsProcess[] = [];
  try {
    await consul.register({ Name: "web", ID: "web-1", Address: "10.0.0.1", Port: 80 });
    const log = join(tmp.dir, "applies.log");
    for (let i = 0; i < members; i++) {
      const id = `m-${i}`;
      const file = await writeHaConfig(join(tmp.dir, id), {
        consulAddress: consul.address,
        id,
        cluster: "bench",
        sessionTtl: "5s",
        mode: "shared",
        settle: "8s",
        tasks: names.map((t) => `new OwnerLog(${JSON.stringify(t)}, ${JSON.stringify(log)}, ${JSON.stringify(id)}, 0)`),
      });
      procs.push(startCtsProcess(file, { name: id }));
    }
    const firsts = await Promise.all(procs.map((p) => p.waitForLine(/ha: acquired task/, 180_000)));
    const startedAt = Math.min(...firsts.map((f) => f.at));
    const load = loadavg()[0]!;
    await waitFor(async () => (await readFile(log, "utf8").catch(() => "")).split("\n").filter((l) => l.endsWith(" end")).length >= TASKS, 600_000, "every task applied");
    const seconds = (Date.now() - startedAt) / 1000;
    const lines = (await readFile(log, "utf8")).split("\n").filter((l) => l.endsWith(" end"));
    const perMember = procs.map((p) => lines.filter((l) => l.split(" ")[1] === p.name).length);
    return { members, seconds: Math.round(seconds * 10) / 10, perMember, load: Math.round(load * 10) / 10 };
  } finally {
    await Promise.all(procs.map((p) => p.terminate(20_000)));
    await consul.stop();
    await tmp.cleanup();
  }
}

const results = [await round(1), await round(2)];
const md = `
## ${new Date().toISOString().slice(0, 10)}: ${TASKS} tasks, 1 vs 2 members (${cpus().length} cores)

| members | first lock → last apply | applies per member | load average at start |
|---:|---:|---|---:|
${results.map((r) => `| ${r.members} | ${r.seconds} s | ${r.perMember.join(" / ")} | ${r.load} |`).join("\n")}
`;
const file = new URL("./results/shared-members.md", import.meta.url);
const before = await readFile(file, "utf8").catch(() => "# Shared mode: 1 vs 2 members on this machine\n\n`node --import tsx bench/shared-members.ts` (see the file's header).\n");
await writeFile(file, before + md);
process.stdout.write(md);
