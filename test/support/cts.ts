import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { loadConfig } from "../../src/config/load.ts";
import { createLogger, type Logger } from "../../src/log/logger.ts";
import { createRuntime, type Runtime, type RuntimeOptions } from "../../src/daemon/compose.ts";
import { tools } from "./tools.ts";

/** Absolute path of the shared fixture task classes, for generated configs to import. */
export const FIXTURE_TASKS = fileURLToPath(new URL("../fixtures/tasks.ts", import.meta.url));
/** Absolute path of the public API (configs in temp dirs cannot resolve the package name). */
export const PUBLIC_API = fileURLToPath(new URL("../../src/index.ts", import.meta.url));

/** A temp dir removed by `cleanup()`. */
export async function tempDir(prefix = "cts-test-"): Promise<{ dir: string; cleanup(): Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  return { dir, cleanup: () => rm(dir, { recursive: true, force: true }) };
}

/** Options of a generated cts.config.ts. */
export interface ConfigOptions {
  consulAddress: string;
  /** TypeScript expressions for the tasks array, e.g. `new MemberList("m", "/tmp/m.txt")`. */
  tasks: string[];
  /** Extra top-level config fields as TypeScript text (e.g. `bufferPeriod: false,`). */
  extra?: string;
  /** The Terraform binary (default: the OpenTofu the tools script built). */
  binary?: string;
}

/** Writes a cts.config.ts into `dir` that uses the real tofu and the offline provider mirror. */
export async function writeConfig(dir: string, opts: ConfigOptions): Promise<string> {
  const t = tools();
  const file = join(dir, "cts.config.ts");
  await writeFile(
    file,
    `import { defineConfig, ModuleTask, services, consulKv, catalogServices, schedule, vaultSecret } from ${JSON.stringify(PUBLIC_API)};
void ModuleTask; void services; void consulKv; void catalogServices; void schedule; void vaultSecret;
import { MemberList, SlowMembers, SlowThenMembers, FailingTask, MetaFiles, KvWithServices, ScheduledMembers, SecretUser, CatalogJson, GuardedPool } from ${JSON.stringify(FIXTURE_TASKS)};
void MemberList; void SlowMembers; void SlowThenMembers; void FailingTask; void MetaFiles; void KvWithServices; void ScheduledMembers; void SecretUser; void CatalogJson; void GuardedPool;
export default defineConfig({
  consul: { address: ${JSON.stringify(opts.consulAddress)} },
  driver: { terraform: { binary: ${JSON.stringify(opts.binary ?? t.tofu)}, cliConfigFile: ${JSON.stringify(t.cliConfig)}, workingDir: ${JSON.stringify(join(dir, "sync-tasks"))}, log: true } },
  ${opts.extra ?? ""}
  ${/\bapi\s*:/.test(opts.extra ?? "") ? "" : "api: { port: 0 }, // daemons in tests never compete for 8558"}
  tasks: [${opts.tasks.join(", ")}],
});
`,
  );
  return file;
}

/** A runtime started in-process from a config file, with its log lines captured. */
export interface TestRuntime extends Runtime {
  lines: string[];
}

/** Loads the config and starts the runtime in the given mode (watch mode also starts watching). */
export async function startRuntime(file: string, opts: Partial<RuntimeOptions> = {}): Promise<TestRuntime> {
  const lines: string[] = [];
  const log: Logger = createLogger({ level: "debug", write: (l) => lines.push(l) });
  const loaded = await loadConfig(file);
  const rt = createRuntime(loaded, { mode: "watch", log, retries: 0, ...opts });
  // Until closed, a timed-out waitFor shows this runtime's log (what it was doing meanwhile).
  openLogs.add(lines);
  const close = rt.close.bind(rt);
  rt.close = () => {
    openLogs.delete(lines);
    return close();
  };
  if ((opts.mode ?? "watch") === "watch") await rt.controller.watch();
  return Object.assign(rt, { lines });
}

/** The logs of the runtimes this process started and has not closed yet. */
const openLogs = new Set<string[]>();

/** The end of each open runtime's log, for a timeout's message. */
function openRuntimeLogs(): string {
  return [...openLogs].map((lines, i) => `\n--- open runtime ${i + 1}, its log (last 40 of ${lines.length} lines):\n${lines.slice(-40).join("\n")}`).join("");
}

/** Polls `check` until it returns a truthy value or `timeoutMs` passes. */
export async function waitFor<T>(check: () => T | Promise<T>, timeoutMs = 20_000, what = "condition"): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await check();
      if (v) return v;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${String(last)}` : ""}${openRuntimeLogs()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Events of a task that ran Terraform or recorded a failure (newest first). */
export function runsOf(rt: Runtime, task: string) {
  return rt.controller.events.list(task);
}
