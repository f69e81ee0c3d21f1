import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { tools } from "../../../test/support/tools.ts";
import { BENCH_TASKS, lit, PUBLIC_API } from "../../lib/config.ts";
import { startDaemonProcess, type DaemonProcess } from "../../lib/daemon-process.ts";
import type { ChaosContext } from "./types.ts";

const CHAOS_TASKS = fileURLToPath(new URL("../tasks.ts", import.meta.url));

/** A chaos config: `<dir>/cts.config.ts`, working dir `<dir>/sync-tasks`. */
export interface ChaosConfigOptions {
  dir: string;
  consulAddress: string;
  /** TypeScript expressions; MemberFile, SlowMemberFile, HostileFiles, ModuleTask, services() and catalogServices() are in scope. */
  tasks: string[];
  /** A backend block (default: cts's default, Consul KV). */
  backend?: Record<string, Record<string, unknown>>;
  /** Extra top-level fields as TypeScript text, e.g. `concurrency: 8,`. */
  extra?: string;
}

/** Writes the config (real OpenTofu, offline provider mirror, buffer off); returns its path. */
export async function writeChaosConfig(o: ChaosConfigOptions): Promise<string> {
  const t = tools();
  const file = join(o.dir, "cts.config.ts");
  await writeFile(
    file,
    `import { defineConfig, services, catalogServices, ModuleTask } from ${JSON.stringify(PUBLIC_API)};
import { MemberFile } from ${JSON.stringify(BENCH_TASKS)};
import { SlowMemberFile, HostileFiles } from ${JSON.stringify(CHAOS_TASKS)};
void services; void catalogServices; void ModuleTask; void MemberFile; void SlowMemberFile; void HostileFiles;
export default defineConfig({
  consul: { address: ${JSON.stringify(o.consulAddress)} },
  driver: { terraform: { binary: ${JSON.stringify(t.tofu)}, cliConfigFile: ${JSON.stringify(t.cliConfig)}, workingDir: ${JSON.stringify(join(o.dir, "sync-tasks"))}${o.backend ? `, backend: ${JSON.stringify(o.backend)}` : ""} } },
  bufferPeriod: false,
  api: { port: 0 },
  ${o.extra ?? ""}
  tasks: [
    ${o.tasks.join(",\n    ")}
  ],
});
`,
  );
  return file;
}

/**
 * A real `cts watch` in `<ctx.tmp>/<scenario>` with one MemberFile task (`task`) writing the
 * passing instances of `service` to members.txt, local state; stopped with the scenario.
 */
export async function startMemberFileDaemon(ctx: ChaosContext, o: { scenario: string; consulAddress: string; task: string; service: string }): Promise<{ dir: string; out: string; d: DaemonProcess }> {
  const dir = join(ctx.tmp, o.scenario);
  await mkdir(dir, { recursive: true });
  const out = join(dir, "members.txt");
  const file = await writeChaosConfig({
    dir,
    consulAddress: o.consulAddress,
    backend: { local: { path: join(dir, "terraform.tfstate") } },
    tasks: [`new MemberFile({ name: ${lit(o.task)}, path: ${lit(out)}, condition: services({ names: [${lit(o.service)}] }) })`],
  });
  const d = startDaemonProcess(file, { cwd: dir });
  ctx.onCleanup(() => d.stop());
  return { dir, out, d };
}
