import type { Command } from "commander";
import { loadConfig, type LoadedConfig } from "../config/load.ts";
import { CtsError, doctorHint, toCtsError } from "../errors/cts-error.ts";
import { readFromSnapshot, readSnapshot } from "../synth/snapshot.ts";
import { taskWorkingDir, workingRoot } from "../synth/paths.ts";
import { synthesizeTask } from "../synth/synthesize.ts";
import { diffSynthesized } from "../synth/json-diff.ts";
import { assembleInput } from "../task/sources.ts";
import { keptOutputs } from "../state/file-state.ts";
import { upstreamOutputs } from "../runtime/chains.ts";
import type { SkippedServiceListener, Source, SourceData } from "../consul/types.ts";
import type { Condition, TaskInputs } from "../task/conditions.ts";
import type { Task } from "../task/task.ts";
import { createConsulReader, warnSkipped } from "../daemon/consul-setup.ts";
import { secretEnv } from "../task/secrets.ts";
import { checkoutBase, type BaseTree } from "./base-tree.ts";
import { diffMarkdown, diffText, hasChanges, type DiffReport, type TaskDiff } from "./diff-report.ts";
import { printJson, say } from "./output.ts";
import { planSections } from "./plan-text.ts";

interface DiffFlags {
  config?: string;
  base: string;
  head?: string;
  snapshot?: string;
  format: string;
  plan?: boolean;
}

/** Exit codes of `cts diff`, as `terraform plan -detailed-exitcode`: 0 nothing changes, 2 something does, 1 an error. */
export const DIFF_EXIT = { same: 0, error: 1, changed: 2 } as const;

/**
 * `cts diff`: every task synthesized at a git ref and at the working tree (or a second ref) over
 * the same data, compared by address, with the values that change.
 */
export function registerDiff(program: Command): void {
  program
    .command("diff")
    .description("Show what a change to the tasks does to their Terraform: synthesizes at --base and at the working tree (or --head) over the same data")
    .argument("[task...]", "tasks to compare (default: all)")
    .option("-c, --config <file>", "config file (default ./cts.config.ts)")
    .option("--base <ref>", "git ref to compare with", "HEAD")
    .option("--head <ref>", "git ref to compare --base with, instead of the working tree")
    .option("--snapshot <file>", "read service and KV data from a snapshot (`cts snapshot`) instead of Consul")
    .option("--format <format>", "text, markdown (a pull request comment) or json", "text")
    .option("--plan", "also plan each changed task against its real state and show the plan's values (as `cts inspect`: live Consul data, Terraform and the backend's credentials)")
    .action(async (names: string[], flags: DiffFlags) => {
      if (!["text", "markdown", "json"].includes(flags.format)) throw new CtsError("USAGE", "usage", `--format must be text, markdown or json, not '${flags.format}'.`);
      try {
        const report = await review(names, flags);
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

/** The comparison, and with --plan the plans; the trees unpacked from git are removed after both. */
async function review(names: string[], flags: DiffFlags): Promise<DiffReport> {
  const tree = await loadConfig(flags.config);
  const unpacked: BaseTree[] = [];
  try {
    const base = await checkoutBase(flags.base, tree.file);
    unpacked.push(base);
    const head = flags.head ? await checkoutBase(flags.head, tree.file, "head") : undefined;
    if (head) unpacked.push(head);
    const before = await loadConfig(base.config);
    // The head ref's config, with the working tree's folders: its task dirs, module paths and state are the same.
    const after = head ? { ...(await loadConfig(head.config)), file: tree.file, dir: tree.dir } : tree;
    for (const side of [before, after]) registerSecrets(side);
    const report = await compare(names, flags, tree, before, after);
    if (flags.plan) await planChanged(report, after);
    return report;
  } finally {
    for (const t of unpacked) await t.dispose();
  }
}

async function compare(names: string[], flags: DiffFlags, tree: LoadedConfig, before: LoadedConfig, after: LoadedConfig): Promise<DiffReport> {
  const read = cachedReader(flags.snapshot ? snapshotRead(flags.snapshot) : createConsulReader(tree.config));
  const all = [...new Set([...after.config.tasks.map((t) => t.name), ...before.config.tasks.map((t) => t.name)])];
  const unknown = names.filter((n) => !all.includes(n));
  if (unknown.length) throw new CtsError("TASK_NOT_FOUND", "usage", `No task '${unknown[0]}' at ${flags.base} or ${flags.head ?? "in the working tree"}. Known tasks: ${all.join(", ") || "(none)"}.`);
  const tasks: TaskDiff[] = [];
  for (const name of names.length ? names : all) {
    const was = before.config.tasks.find((t) => t.name === name);
    const now = after.config.tasks.find((t) => t.name === name);
    // Both sides synthesize as if in the working tree's folders, so paths in the JSON agree.
    const [a, b] = await Promise.all([was && synth(before, tree, was, read), now && synth(after, tree, now, read)]);
    const failed = [a, b].find((r) => r && "error" in r) as { error: string } | undefined;
    if (failed) {
      tasks.push({ task: name, status: "error", changes: [], error: failed.error });
      continue;
    }
    const changes = diffSynthesized((a as { json: string } | undefined)?.json, (b as { json: string } | undefined)?.json);
    tasks.push({ task: name, status: !was ? "added" : !now ? "removed" : changes.length ? "changed" : "unchanged", changes });
  }
  return { base: flags.base, ...(flags.head ? { head: flags.head } : {}), ...(flags.snapshot ? { snapshot: flags.snapshot } : {}), tasks };
}

/**
 * Plans the compared version (the working tree's, or --head's) of each added or changed task
 * against the task's real state, through the runtime `cts inspect` uses (live Consul data: a plan
 * needs the real state anyway), and keeps Terraform's text of each planned resource: its values.
 */
async function planChanged(report: DiffReport, loaded: LoadedConfig): Promise<void> {
  const wanted = report.tasks.filter((t) => t.status === "changed" || t.status === "added");
  if (!wanted.length) return;
  const { createRuntime } = await import("../daemon/compose.ts");
  const { createLogger } = await import("../log/logger.ts");
  const rt = createRuntime(loaded, { mode: "inspect", log: createLogger({ level: "warn" }) });
  try {
    const outcomes = await rt.controller.inspect(wanted.map((t) => t.task));
    for (const [i, t] of wanted.entries()) {
      const o = outcomes[i]!;
      if (!o.ok || !o.result) {
        t.plan = { error: o.error?.message ?? o.outcome };
        continue;
      }
      const resources = o.result.resources ?? [];
      const sections = planSections(o.result.output, resources.map((r) => r.address));
      t.plan = { ...o.result.summary, resources: resources.map((r) => ({ address: r.address, action: r.action, ...(sections.has(r.address) ? { lines: sections.get(r.address)! } : {}) })) };
    }
  } finally {
    await rt.close();
  }
}

/**
 * The task secrets this process can read (environment variables, files) become known secrets, so
 * a value a task wrote into its JSON is redacted in the review. Those it cannot read (not set in
 * CI, in Vault) are left: the review then cannot recognise them.
 */
function registerSecrets(side: LoadedConfig): void {
  for (const task of side.config.tasks)
    for (const [name, source] of Object.entries(task.secrets ?? {})) {
      try {
        secretEnv(task.name, { [name]: source });
      } catch {
        // Not readable here: nothing to register.
      }
    }
}

type Read = (source: Source) => Promise<SourceData>;

async function synth(side: LoadedConfig, head: LoadedConfig, task: Task<Condition, TaskInputs>, read: Read): Promise<{ json: string } | { error: string }> {
  try {
    const input = await assembleInput(task, read);
    const root = workingRoot(head.dir, head.config.driver?.terraform?.workingDir);
    // Task chains: both sides read the upstream tasks' outputs the daemon kept (none kept: `{}`).
    if (task.after?.length) input.outputs = upstreamOutputs(task.after, (name) => keptOutputs(root, name));
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
