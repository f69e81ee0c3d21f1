import { rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { LoadedConfig } from "../config/load.ts";
import type { Logger } from "../log.ts";
import type { Metrics } from "../metrics/metrics.ts";
import type { TerraformDriver } from "../terraform/types.ts";
import type { Synthesizer } from "../synth/synthesizer.ts";
import { APPLIED_HASH_FILE } from "../synth/paths.ts";
import { secretEnv } from "../task/secrets.ts";
import type { RunOutcome } from "./interfaces.ts";
import type { TaskEntry } from "./task-entry.ts";
import type { TaskInputSource } from "./task-input.ts";

/** What a run does with Terraform. */
export type RunMode = "apply" | "plan" | "destroy";

/** The driver as the runtime uses it: the contract plus where each task works. */
export type RunDriver = TerraformDriver & {
  taskDir(task: string): string;
  /** Ends the warm provider processes of one task, or of all (src/terraform/warm-pool.ts). */
  coolDown?(task?: string): Promise<void>;
};

/** A module task's provider values and `task_env` (CTS passes them through the environment only). */
function taskEnvironment(e: TaskEntry): Record<string, string> {
  const t = e.task as { environment?: () => Record<string, string> };
  return typeof t.environment === "function" ? t.environment() : {};
}

/** What one attempt needs. */
export interface RunDeps {
  loaded: LoadedConfig;
  driver: RunDriver;
  synthesizer: Synthesizer;
  inputs: TaskInputSource;
  log: Logger;
  metrics?: Metrics;
}

/**
 * One attempt at a run: input → synthesize → skip when the JSON equals the last applied one →
 * apply, plan or destroy. Throws what failed; retries and events are the caller's.
 *
 * The applied hash (the no-op skip) is voided before an apply, in memory and on disk, and written
 * only after it succeeded: an apply that failed, was cancelled or was cut short by a crash may
 * have changed part of the infrastructure, so the next run must apply even if its JSON is the same.
 */
export async function runAttempt(deps: RunDeps, e: TaskEntry, mode: RunMode, signal: AbortSignal): Promise<RunOutcome> {
  const { loaded, driver, synthesizer } = deps;
  const input = await deps.inputs.inputOf(e, signal);
  const taskDir = driver.taskDir(e.name);
  const synthStarted = performance.now();
  const synth = await synthesizer.synth(e.ref, input, {
    backend: loaded.config.driver?.terraform?.backend,
    configDir: loaded.dir,
    taskDir,
    providerVersions: loaded.config.driver?.terraform?.providerVersions,
  });
  deps.metrics?.phase(e.name, "synthesize", (performance.now() - synthStarted) / 1000);
  // CTS applies a scheduled task on every tick, whatever its data: the infrastructure may have drifted.
  if (mode === "apply" && e.task.condition.kind !== "schedule" && synth.hash === e.lastAppliedHash) return { task: e.name, ok: true, outcome: "no-op", synth };
  // Secrets are read at every run (rotation needs no restart) and reach Terraform only as TF_VAR_ env.
  const ws = { task: e.name, json: synth.json, env: { ...taskEnvironment(e), ...secretEnv(e.name, e.task.secrets) } };
  const onOutput = (line: string) => deps.log.debug(`[${e.name}] ${line}`, { task: e.name });
  if (mode === "plan") {
    const result = await driver.plan(ws, { signal, onOutput });
    return { task: e.name, ok: true, outcome: "planned", result, synth };
  }
  e.lastAppliedHash = undefined;
  await rm(join(taskDir, APPLIED_HASH_FILE), { force: true });
  if (mode === "destroy") {
    const result = await driver.destroy(ws, { signal, onOutput });
    return { task: e.name, ok: true, outcome: "destroyed", result, synth };
  }
  const result = await driver.apply(ws, { signal, onOutput });
  e.lastAppliedHash = synth.hash;
  // Best effort: a missing file only costs one apply that could have been skipped.
  await writeFile(join(taskDir, APPLIED_HASH_FILE), synth.hash + "\n", { mode: 0o640 }).catch(() => undefined);
  return { task: e.name, ok: true, outcome: "applied", result, synth };
}
