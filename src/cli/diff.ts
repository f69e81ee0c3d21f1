import type { Command } from "commander";
import { loadConfig, type LoadedConfig } from "../config/load.ts";
import { CtsError, doctorHint, toCtsError } from "../errors/cts-error.ts";
import { readFromSnapshot, readSnapshot } from "../synth/snapshot.ts";
import { taskWorkingDir, workingRoot } from "../synth/paths.ts";
import { synthesizeTask } from "../synth/synthesize.ts";
import { diffSynthesized } from "../synth/json-diff.ts";
import { assembleInput } from "../task/sources.ts";
import type { SkippedServiceListener, Source, SourceData } from "../consul/types.ts";
import type { Condition, TaskInputs } from "../task/conditions.ts";
import type { Task } from "../task/task.ts";
import { createConsulReader, warnSkipped } from "../daemon/consul-setup.ts";
import { checkoutBase } from "./base-tree.ts";
import { diffMarkdown, diffText, hasChanges, type DiffReport, type TaskDiff } from "./diff-report.ts";
import { printJson, say } from "./output.ts";

interface DiffFlags {
  config?: string;
  base: string;
  snapshot?: string;
  format: string;
  plan?: boolean;
}

/** Exit codes of `cts diff`, as `terraform plan -detailed-exitcode`: 0 nothing changes, 2 something does, 1 an error. */
export const DIFF_EXIT = { same: 0, error: 1, changed: 2 } as const;

/** `cts diff`: every task synthesized at the working tree and at a git ref over the same data, compared by address. */
export function registerDiff(program: Command): void {
  program
    .command("diff")
    .description("Show what a change to the tasks does to their Terraform: synthesizes at --base and at the working tree over the same data")
    .argument("[task...]", "tasks to compare (default: all)")
    .option("-c, --config <file>", "config file (default ./cts.config.ts)")
    .option("--base <ref>", "git ref to compare with", "HEAD")
    .option("--snapshot <file>", "read service and KV data from a snapshot (`cts snapshot`) instead of Consul")
    .option("--format <format>", "text, markdown (a pull request comment) or json", "text")
    .option("--plan", "also plan each changed task against its real state (as `cts inspect`: live Consul data, Terraform and the backend's credentials)")
    .action(async (names: string[], flags: DiffFlags) => {
      if (!["text", "markdown", "json"].includes(flags.format)) throw new CtsError("USAGE", "usage", `--format must be text, markdown or json, not '${flags.format}'.`);
      try {
        const report = await compare(names, flags);
        if (flags.plan) await planChanged(report, flags);
        if (flags.format === "json") printJson({ ...report, changed: hasChanges(report) });
        else say(flags.format === "markdown" ? diffMarkdown(report) : diffText(report));
        process.exitCode = report.tasks.some((t) => t.status === "error") ? DIFF_EXIT.error : hasChanges(report) ? DIFF_EXIT.changed : DIFF_EXIT.same;
      } catch (err) {
        // Exit 2 means "changes" here, so every failure (a usage one included) exits 1.
        const e = toCtsError(err);
        say(`error: ${e.message}${doctorHint(e)}\n`, process.stderr);
        process.exitCode = DIFF_EXIT.error;
      }
    });
}

async function compare(names: string[], flags: DiffFlags): Promise<DiffReport> {
  const head = await loadConfig(flags.config);
  const base = await checkoutBase(flags.base, head.file);
  try {
    const before = await loadConfig(base.config);
    const read = cachedReader(flags.snapshot ? snapshotRead(flags.snapshot) : createConsulReader(head.config));
    const all = [...new Set([...head.config.tasks.map((t) => t.name), ...before.config.tasks.map((t) => t.name)])];
    const unknown = names.filter((n) => !all.includes(n));
    if (unknown.length) throw new CtsError("TASK_NOT_FOUND", "usage", `No task '${unknown[0]}' at ${flags.base} or in the working tree. Known tasks: ${all.join(", ") || "(none)"}.`);
    const tasks: TaskDiff[] = [];
    for (const name of names.length ? names : all) {
      const was = before.config.tasks.find((t) => t.name === name);
      const now = head.config.tasks.find((t) => t.name === name);
      // Both sides synthesize as if in the working tree's folders, so paths in the JSON agree.
      const [a, b] = await Promise.all([was && synth(before, head, was, read), now && synth(head, head, now, read)]);
      const failed = [a, b].find((r) => r && "error" in r) as { error: string } | undefined;
      if (failed) {
        tasks.push({ task: name, status: "error", changes: [], error: failed.error });
        continue;
      }
      const changes = diffSynthesized((a as { json: string } | undefined)?.json, (b as { json: string } | undefined)?.json);
      tasks.push({ task: name, status: !was ? "added" : !now ? "removed" : changes.length ? "changed" : "unchanged", changes });
    }
    return { base: flags.base, ...(flags.snapshot ? { snapshot: flags.snapshot } : {}), tasks };
  } finally {
    await base.dispose();
  }
}

/**
 * Plans the working tree's version of each added or changed task against the task's real state,
 * through the runtime `cts inspect` uses (live Consul data: a plan needs the real state anyway).
 */
async function planChanged(report: DiffReport, flags: DiffFlags): Promise<void> {
  const wanted = report.tasks.filter((t) => t.status === "changed" || t.status === "added");
  if (!wanted.length) return;
  const loaded = await loadConfig(flags.config);
  const { createRuntime } = await import("../daemon/compose.ts");
  const { createLogger } = await import("../log/logger.ts");
  const rt = createRuntime(loaded, { mode: "inspect", log: createLogger({ level: "warn" }) });
  try {
    const outcomes = await rt.controller.inspect(wanted.map((t) => t.task));
    for (const [i, t] of wanted.entries()) {
      const o = outcomes[i]!;
      t.plan = o.ok && o.result ? { ...o.result.summary, resources: o.result.resources ?? [] } : { error: o.error?.message ?? o.outcome };
    }
  } finally {
    await rt.close();
  }
}

type Read = (source: Source) => Promise<SourceData>;

async function synth(side: LoadedConfig, head: LoadedConfig, task: Task<Condition, TaskInputs>, read: Read): Promise<{ json: string } | { error: string }> {
  try {
    const input = await assembleInput(task, read);
    const root = workingRoot(head.dir, head.config.driver?.terraform?.workingDir);
    const result = synthesizeTask(task, input, {
      backend: side.config.driver?.terraform?.backend,
      configDir: head.dir,
      taskDir: taskWorkingDir(root, head.dir, task),
      providerVersions: side.config.driver?.terraform?.providerVersions,
    });
    return { json: result.json };
  } catch (err) {
    return { error: toCtsError(err, "TASK_SYNTH_FAILED", task.name).message };
  }
}

/** Each source is read once: both sides see the same answer even if Consul changes meanwhile. */
function cachedReader(read: (source: Source, onSkipped?: SkippedServiceListener) => Promise<SourceData> | SourceData): Read {
  const answers = new Map<string, Promise<SourceData>>();
  const onSkipped = warnSkipped("diff", (l) => process.stderr.write(`${l}\n`));
  return (source) => {
    const key = JSON.stringify(source);
    let answer = answers.get(key);
    if (!answer) answers.set(key, (answer = Promise.resolve(read(source, onSkipped))));
    return answer.then((d) => structuredClone(d));
  };
}

function snapshotRead(file: string): (source: Source) => SourceData {
  const snap = readSnapshot(file);
  return (source) => readFromSnapshot(snap, source);
}
