import { readFile } from "node:fs/promises";
import { join } from "node:path";
import type { Command } from "commander";
import { loadConfig, type LoadedConfig } from "../config/load.ts";
import { ownFolder, writeKept } from "../driver/safe-files.ts";
import { CtsError, messageOf, toCtsError } from "../errors/cts-error.ts";
import { readFromSnapshot, readSnapshot } from "../synth/snapshot.ts";
import { taskDir, taskWorkingDir, workingRoot } from "../synth/paths.ts";
import { keptAppliedKey, keptOutputs } from "../state/file-state.ts";
import { upstreamOutputs } from "../runtime/chains.ts";
import { synthesizeTask, type SynthResult } from "../synth/synthesize.ts";
import { assembleInput } from "../task/sources.ts";
import type { Source, SourceData } from "../consul/types.ts";
import type { Condition, TaskInputs } from "../task/conditions.ts";
import type { Task } from "../task/task.ts";
import { createConsulReader, warnSkipped } from "../daemon/consul-setup.ts";
import type { SkippedServiceListener } from "../consul/types.ts";
import { printJson, table } from "./output.ts";
import { userCodeFields, userStackText } from "../errors/user-frames.ts";

interface SynthFlags {
  config?: string;
  out?: string;
  stdout?: boolean;
  input?: string;
  snapshot?: string;
  json?: boolean;
}

/** Where `cts synth` writes for review unless `--out` says otherwise: beside the config, as cdktf's `cdktf.out`. */
export const REVIEW_DIR = "cts.out";

/** One task's line in the summary. */
interface SynthRow {
  task: string;
  ok: boolean;
  resources?: number;
  bytes?: number;
  hash?: string;
  /** "yes", "no" or "never applied". */
  changed?: string;
  file?: string;
  error?: string;
  /** Where the task's code threw (file:line:column), and its first frames. */
  at?: string;
  stack?: string[];
}

/** `cts synth [task...]`: synthesizes tasks from live Consul data (or a snapshot) for review. */
export function registerSynth(program: Command): void {
  program
    .command("synth")
    .description("Synthesize tasks to Terraform JSON from current Consul data, for review")
    .argument("[task...]", "tasks to synthesize (default: all)")
    .option("-c, --config <file>", "config file (default ./cts.config.ts)")
    .option("-o, --out <dir>", `write <dir>/<task>/main.tf.json (default ${REVIEW_DIR}/ beside the config; never a task's working dir, which a running cts owns)`)
    .option("--stdout", "print the JSON instead of writing files")
    .option("-s, --snapshot <file>", "read service and KV data from a JSON snapshot (`cts snapshot`) instead of Consul")
    .option("-i, --input <file>", "the same as --snapshot (its first name)")
    .option("--json", "print the summary as JSON")
    .action(async (names: string[], flags: SynthFlags) => {
      const loaded = await loadConfig(flags.config);
      const tasks = selectTasks(loaded, names);
      const snapshot = flags.snapshot ?? flags.input;
      const read = snapshot ? snapshotReader(snapshot) : createConsulReader(loaded.config);
      const root = workingRoot(loaded.dir, loaded.config.driver?.terraform?.workingDir);
      const outRoot = flags.out ? workingRoot(process.cwd(), flags.out) : join(loaded.dir, REVIEW_DIR);
      const rows: SynthRow[] = [];
      for (const task of tasks) rows.push(await synthOne(loaded, task, read, root, outRoot, flags));
      if (flags.json) printJson({ tasks: rows });
      else if (!flags.stdout) process.stdout.write(summary(rows));
      for (const r of rows) if (!r.ok) process.stderr.write(`error: ${r.error}${userStackText({ detail: { userStack: r.stack } })}\n`);
      if (rows.some((r) => !r.ok)) process.exitCode = 1;
    });
}

/** The named tasks, or all; an unknown name is a usage error listing the known ones. */
export function selectTasks(loaded: LoadedConfig, names: string[]): Array<Task<Condition, TaskInputs>> {
  const all = loaded.config.tasks;
  if (names.length === 0) return all;
  return names.map((n) => {
    const t = all.find((x) => x.name === n);
    if (!t) throw new CtsError("TASK_NOT_FOUND", "usage", `No task '${n}' in ${loaded.file}. Known tasks: ${all.map((x) => x.name).join(", ") || "(none)"}.`);
    return t;
  });
}

function snapshotReader(file: string): (source: Source) => SourceData {
  const snap = readSnapshot(file);
  return (source) => readFromSnapshot(snap, source);
}

async function synthOne(
  loaded: LoadedConfig,
  task: Task<Condition, TaskInputs>,
  read: (source: Source, onSkipped?: SkippedServiceListener) => Promise<SourceData> | SourceData,
  root: string,
  outRoot: string,
  flags: SynthFlags,
): Promise<SynthRow> {
  let result: SynthResult;
  const dir = taskDir(outRoot, task.name);
  const live = taskWorkingDir(root, loaded.dir, task);
  try {
    const onSkipped = warnSkipped(task.name, (line) => process.stderr.write(`${line}\n`));
    const input = await assembleInput(task, (source) => read(source, onSkipped));
    // Task chains: the upstream tasks' outputs as this config's daemon kept them (none kept: `{}`).
    if (task.after?.length) input.outputs = upstreamOutputs(task.after, (name) => keptOutputs(root, name));
    result = synthesizeTask(task, input, {
      backend: loaded.config.driver?.terraform?.backend,
      configDir: loaded.dir,
      taskDir: live,
      providerVersions: loaded.config.driver?.terraform?.providerVersions,
    });
  } catch (err) {
    const error = toCtsError(err, "TASK_SYNTH_FAILED", task.name);
    return { task: task.name, ok: false, error: error.message, ...userCodeFields(error) };
  }
  const applied = keptAppliedKey(root, task.name, live);
  // A task that reads templates stores "<hash>+<digest of their values>": the JSON is the part before '+'.
  const changed = applied === undefined ? "never applied" : applied.split("+")[0] === result.hash ? "no" : "yes";
  let file: string | undefined;
  if (flags.stdout) {
    process.stdout.write(result.json);
  } else {
    // The task's working dir is the daemon's: a main.tf.json written there would be what its next
    // Terraform command reads. A review goes to a folder of its own.
    if (dir === live)
      return { task: task.name, ok: false, error: `Task '${task.name}': --out would write ${join(dir, "main.tf.json")}, the task's working dir, which a running cts reads. Pass another --out folder (default ${REVIEW_DIR}/ beside the config), or --stdout.` };
    try {
      // As the driver writes it: never through a link, a failure naming the folder, cause and fix.
      ownFolder(dir, task.name);
      writeKept(dir, "main.tf.json", result.json, task.name, 0o640);
      file = join(dir, "main.tf.json");
    } catch (err) {
      return { task: task.name, ok: false, error: messageOf(err) };
    }
  }
  return { task: task.name, ok: true, resources: result.resources, bytes: result.bytes, hash: result.hash, changed, ...(file ? { file } : {}) };
}

function summary(rows: SynthRow[]): string {
  return table([
    ["TASK", "RESOURCES", "BYTES", "HASH", "CHANGED", "FILE"],
    ...rows.map((r) =>
      r.ok ? [r.task, String(r.resources), String(r.bytes), r.hash!.slice(0, 12), r.changed!, r.file ?? "-"] : [r.task, "-", "-", "-", "error", "-"],
    ),
  ]);
}
