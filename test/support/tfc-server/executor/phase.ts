import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { x as extract } from "tar";
import type { TfcServerVariants } from "../options.ts";
import type { Run, Variable, Workspace } from "../store.ts";
import type { ProcessGroups } from "./processes.ts";
import { tfvarsFile } from "./tfvars.ts";

/** What one phase (plan or apply) of a run needs. */
export interface PhaseInput {
  run: Run;
  workspace: Workspace;
  tarball: Buffer;
  variables: Variable[];
  tofu: { binary: string; cliConfig: string };
  variants: TfcServerVariants;
  /** Parent of every run's working directories (removed when the server stops). */
  workRoot: string;
  processes: ProcessGroups;
  log: (text: string) => void;
}

/** Resource counts of a plan, from its JSON. */
export interface Counts {
  additions: number;
  changes: number;
  destructions: number;
}

/** What a plan produced. */
export interface PlanResult {
  ok: boolean;
  hasChanges: boolean;
  counts: Counts;
  planFile?: Buffer;
  planJson?: string;
}

/** Plans in a fresh directory: unpack, write state and terraform.tfvars, init, plan -out, show -json. */
export async function executePlan(input: PhaseInput): Promise<PlanResult> {
  const none: PlanResult = { ok: false, hasChanges: false, counts: { additions: 0, changes: 0, destructions: 0 } };
  return inWorkDir(input, "plan", async (dir, tofu) => {
    const terraformVars = input.variables.filter((v) => v.category === "terraform").map((v) => ({ key: v.key, value: v.value, hcl: v.hcl }));
    const runVars = input.run.variables.map((v) => ({ key: v.key, value: v.value, hcl: true }));
    await writeFile(join(dir, "terraform.tfvars"), tfvarsFile([...terraformVars, ...runVars]), { mode: 0o600 });
    if (!(await init(tofu))) return none;
    const plan = await tofu(["plan", "-input=false", "-no-color", "-detailed-exitcode", "-out=tfplan", ...(input.run.isDestroy ? ["-destroy"] : [])]);
    if (plan.exitCode !== 0 && plan.exitCode !== 2) return none;
    const show = await tofu(["show", "-json", "tfplan"], { quiet: true });
    if (show.exitCode !== 0) return none;
    return { ok: true, hasChanges: plan.exitCode === 2, counts: countChanges(show.stdout), planFile: await readFile(join(dir, "tfplan")), planJson: show.stdout };
  });
}

/** Applies the saved plan in a fresh directory; returns the state file it left (also when the apply failed). */
export async function executeApply(input: PhaseInput, planFile: Buffer): Promise<{ ok: boolean; state: string | undefined }> {
  return inWorkDir(input, "apply", async (dir, tofu) => {
    if (!(await init(tofu))) return { ok: false, state: undefined };
    await writeFile(join(dir, "tfplan"), planFile);
    const apply = await tofu(["apply", "-input=false", "-no-color", "tfplan"]);
    const state = await readFile(join(dir, "terraform.tfstate"), "utf8").catch(() => undefined);
    return { ok: apply.exitCode === 0, state };
  });
}

type Tofu = (args: string[], opts?: { quiet?: boolean }) => Promise<{ exitCode: number | null; stdout: string }>;

async function init(tofu: Tofu): Promise<boolean> {
  // No plugin cache (index.ts's workerCliConfig): runs install from the mirror side by side.
  const res = await tofu(["init", "-input=false", "-no-color"]);
  return res.exitCode === 0;
}

/**
 * Runs `fn` in a new directory holding the configuration and the workspace's current state, then
 * removes the directory: nothing of a run's working directory outlives its phase (variant 8).
 */
async function inWorkDir<T>(input: PhaseInput, phase: string, fn: (dir: string, tofu: Tofu) => Promise<T>): Promise<T> {
  const dir = await mkdtemp(join(input.workRoot, `${input.run.id}-${phase}-`));
  try {
    await pipeline(Readable.from([input.tarball]), extract({ cwd: dir, strict: true }));
    const state = input.workspace.stateVersions.at(-1)?.state;
    if (state) await writeFile(join(dir, "terraform.tfstate"), state, { mode: 0o600 });
    const env = await runEnv(input, dir);
    const tofu: Tofu = async (args, opts = {}) => {
      input.log(`\n$ tofu ${args.join(" ")}\n`);
      const res = await input.processes.run(input.tofu.binary, args, { cwd: dir, env, signal: input.run.abort.signal, onOutput: opts.quiet ? () => {} : input.log });
      if (opts.quiet && res.exitCode !== 0) input.log(res.stderr);
      return res;
    };
    return await fn(dir, tofu);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * The run's environment: the server's own (variant `runsOnSameHost`) or only PATH and a HOME of
 * its own; then the offline CLI config and TFC's run variables; then the workspace's env vars.
 */
async function runEnv(input: PhaseInput, dir: string): Promise<Record<string, string>> {
  const env: Record<string, string> = {};
  if (input.variants.runsOnSameHost) {
    for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith("TF_")) env[k] = v;
  } else {
    const home = join(dir, ".home");
    await mkdir(home);
    env.PATH = process.env.PATH ?? "/usr/bin:/bin";
    env.HOME = home;
  }
  Object.assign(env, {
    TF_CLI_CONFIG_FILE: input.tofu.cliConfig,
    CHECKPOINT_DISABLE: "1",
    TF_IN_AUTOMATION: "1",
    TF_INPUT: "0",
    TFC_RUN_ID: input.run.id,
    TFC_WORKSPACE_NAME: input.workspace.name,
    TFC_WORKSPACE_SLUG: `${input.workspace.organization}/${input.workspace.name}`,
    TFC_CONFIGURATION_VERSION_ID: input.run.configurationVersionId,
  });
  for (const v of input.variables) if (v.category === "env") env[v.key] = v.value;
  return env;
}

/** Additions, changes and destructions in a plan's JSON (a replacement counts as one of each). */
export function countChanges(planJson: string): Counts {
  const counts = { additions: 0, changes: 0, destructions: 0 };
  for (const rc of (JSON.parse(planJson).resource_changes ?? []) as { change?: { actions?: string[] } }[]) {
    const actions = rc.change?.actions ?? [];
    if (actions.includes("create")) counts.additions++;
    if (actions.includes("delete")) counts.destructions++;
    if (actions.includes("update")) counts.changes++;
  }
  return counts;
}
