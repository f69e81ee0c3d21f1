import type * as Cdktf from "cdktf";
import type { TerraformModule, TerraformStack } from "cdktf";
import type { IConstruct } from "constructs";
import { tmpdir } from "node:os";
import { dataTooDeep } from "../values/data-depth.ts";
import { CtsError, messageOf } from "../errors/cts-error.ts";
import type { AnyTaskInput, Task } from "../task/task.ts";
import type { Condition, TaskInputs } from "../task/conditions.ts";
import { isModuleTask } from "../task/module-task.ts";
import { CONTEXT_CONFIG_DIR, CONTEXT_TASK_DIR } from "../cdktf/context.ts";
import type { BackendConfig } from "../config/types.ts";
import { backendBlock } from "./backend.ts";
import { withLiteralTable } from "../cdktf/cdktf-literals.ts";
import { cdk } from "../cdktf/load.ts";
import { CDK_PACKAGES, cdksIn, defaultCdk, type CdkName } from "../cdktf/cdk-library.ts";
import { sha256, stableStringify } from "./stable-json.ts";
import { userCode } from "../errors/user-frames.ts";
import { expressionsIn, keepOwnExpressions, type OwnExpressions } from "./own-expressions.ts";


/** Where a synthesis happens: backend and paths ModuleTask needs to point at local modules. */
export interface SynthContext {
  /** Backend block (default: CTS's Consul backend). */
  backend?: BackendConfig;
  /** Directory of the config file: relative module sources are resolved from here. */
  configDir?: string;
  /** Directory the JSON will be written to: local module sources are written relative to it. */
  taskDir?: string;
  /** Provider version constraints to write instead of the bindings' exact pins (name → constraint). */
  providerVersions?: Record<string, string>;
}

/** The output of synthesizing one task. */
export interface SynthResult {
  task: string;
  /** Terraform JSON (sorted keys, stable bytes). */
  json: string;
  /** sha256 of `json`: equal hashes mean nothing changed. */
  hash: string;
  /** Number of resources, data sources and modules. */
  resources: number;
  /** Size of `json` in bytes. */
  bytes: number;
}


/** What a synthesis records beside its JSON. */
export interface SynthOptions {
  /** Record which expressions the task wrote itself (`ownExpressionsOf(result)`; for Testing). */
  ownExpressions?: boolean;
}

/**
 * Synthesizes one task to Terraform JSON in memory. The task sees catalog data exactly as Consul
 * holds it; every piece of literal text in the output (catalog data and the task's own strings)
 * is written as literal Terraform text, and only cdktf's expressions are live (src/cdktf/literal-text.ts).
 * The App and stack come from the library (cdktf or cdktn) the task's constructs are built with.
 * Starts no Terraform process.
 */
export function synthesizeTask(task: Task<Condition, TaskInputs>, input: AnyTaskInput, ctx: SynthContext = {}, options: SynthOptions = {}): SynthResult {
  // Task chains: every upstream task has its entry in `input.outputs` (`{}` when its outputs are not
  // known here: before its first apply, `cts synth` without a kept state).
  if (task.after?.length) input = { ...input, outputs: Object.fromEntries(task.after.map((name) => [name, input.outputs?.[name] ?? {}])) };
  // A module task is CTS's generated root module: plain JSON, no CDKTF app or stack.
  if (isModuleTask(task)) {
    const json = task.terraformJson(input, ctx);
    // Catalog data and variables are in the module block (literal); the provider blocks are cts's.
    const own = options.ownExpressions ? expressionsIn(json, ["module"]) : undefined;
    return result(task.name, finish(json, ctx), own);
  }
  const first = cdkByClass.get(task.constructor) ?? defaultCdk();
  const outcome = synthesizeOn(first, task, input, ctx, options);
  if (!("other" in outcome)) return outcome;
  // The task builds with the other library: its stack must be of that library too (cdktn's Fn
  // records itself on its stack, and each library's hooks trust only its own expressions).
  cdkByClass.set(task.constructor, outcome.other);
  const second = synthesizeOn(outcome.other, task, input, ctx, options);
  // Built with the first library again: the task picks its library by something that changed.
  if ("other" in second) throw mixedConstructs(task.name, new Map([[outcome.other, outcome.path], [second.other, second.path]]));
  return second;
}

/** The library each task class was last seen building with (a first guess for its next synthesis). */
const cdkByClass = new WeakMap<Function, CdkName>();

/** Synthesizes on library `name`, or says the task's constructs are all of the other library. */
function synthesizeOn(name: CdkName, task: Task<Condition, TaskInputs>, input: AnyTaskInput, ctx: SynthContext, options: SynthOptions): SynthResult | { other: CdkName; path: string } {
  const lib = cdk(name);
  const { App, TerraformStack } = lib;
  const app = new App({
    outdir: tmpdir(),
    stackTraces: false,
    skipValidation: true,
    skipBackendValidation: true,
    context: { [CONTEXT_CONFIG_DIR]: ctx.configDir, [CONTEXT_TASK_DIR]: ctx.taskDir },
  });
  return withLiteralTable(name, (literals) => {
    let stack: TerraformStack;
    try {
      stack = new TerraformStack(app, task.name);
    } catch (cause) {
      throw new CtsError("TASK_NAME_INVALID", "usage", `cannot create a stack: ${messageOf(cause)}`, { task: task.name, cause });
    }
    let threw: { cause: unknown } | undefined;
    try {
      task.synthesize(stack, input as never);
    } catch (cause) {
      threw = { cause };
    }
    // Before anything resolves: which library the task's elements are of.
    const cdks = cdksIn(stack);
    if (cdks.size > 1) throw mixedConstructs(task.name, cdks);
    const other = [...cdks.keys()].find((n) => n !== name);
    if (other) return { other, path: cdks.get(other)! };
    if (threw) {
      const { cause } = threw;
      const path = lastConstructPath(stack);
      const where = userCode(cause);
      throw new CtsError("TASK_SYNTH_FAILED", "usage", `synthesize() threw: ${messageOf(cause)}${where ? ` at ${where.at}` : ""}${path ? ` (last construct: ${path})` : ""}. Fix the task class and run \`cts synth ${task.name}\`.`, {
        task: task.name,
        cause,
        detail: { constructPath: path, ...userDetail(where) },
      });
    }
    assertUniqueAddresses(task.name, stack, lib);
    let tf: Record<string, any>;
    try {
      stack.prepareStack();
      tf = stack.toTerraform();
    } catch (cause) {
      // cdktf resolves values recursively: thousands of levels overflow its stack (it calls 200+ "circular").
      if (cause instanceof RangeError && /call stack/.test(cause.message)) throw dataTooDeep("the configuration the task builds", { task: task.name, limit: 200 });
      if (cause instanceof CtsError && cause.code === "TASK_CDK_MIXED") throw new CtsError(cause.code, cause.category, cause.message, { task: task.name, cause, detail: cause.detail });
      const where = userCode(cause);
      throw new CtsError("TASK_SYNTH_INVALID", "usage", `produced invalid configuration: ${messageOf(cause)}${where ? ` at ${where.at}` : ""}. Fix the task class and run \`cts synth ${task.name}\`.`, { task: task.name, cause, detail: userDetail(where) });
    }
    let written: Record<string, any>;
    const own: OwnExpressions | undefined = options.ownExpressions ? {} : undefined;
    try {
      written = own ? literals.writeDeepRecorded(tf, own) : literals.writeDeep(tf);
    } catch (cause) {
      if (cause instanceof CtsError) throw new CtsError(cause.code, cause.category, cause.message, { task: task.name, cause });
      throw cause;
    }
    return result(task.name, finish(written, ctx), own);
  });
}

/** The user's frames as error detail: plain data, so it crosses the worker thread with the error. */
function userDetail(where: ReturnType<typeof userCode>): Record<string, unknown> {
  return where ? { at: where.at, userStack: where.frames } : {};
}

function result(task: string, out: Record<string, any>, own?: OwnExpressions): SynthResult {
  let json: string;
  try {
    json = stableStringify(out);
  } catch (err) {
    throw err instanceof CtsError && err.code === "DATA_TOO_DEEP" ? dataTooDeep("the Terraform JSON", { task, limit: err.detail.limit as number }) : err;
  }
  const synthesized = { task, json, hash: sha256(json), resources: countResources(out), bytes: Buffer.byteLength(json) };
  if (own) {
    keepOwnExpressions(synthesized, own);
    keepOwnExpressions(json, own);
  }
  return synthesized;
}

/** Sets the backend, loosens binding pins, fixes metadata. */
function finish(tf: Record<string, any>, ctx: SynthContext): Record<string, any> {
  const backend = backendBlock(ctx.backend);
  tf.terraform = { ...(tf.terraform ?? {}), backend };
  const meta = tf["//"]?.metadata;
  if (meta) meta.backend = Object.keys(backend)[0];
  const providers: Record<string, { version?: string }> = tf.terraform.required_providers ?? {};
  for (const [name, req] of Object.entries(providers)) {
    const override = ctx.providerVersions?.[name];
    if (override) req.version = override;
    else if (req.version && /^\d+\.\d+\.\d+$/.test(req.version)) {
      // cdktf bindings pin one exact version; any compatible release of the provider is fine.
      const [major, minor] = req.version.split(".");
      req.version = `~> ${major}.${minor}`;
    }
  }
  return tf;
}

function countResources(tf: Record<string, any>): number {
  let n = 0;
  for (const block of ["resource", "data"]) for (const byType of Object.values<Record<string, unknown>>(tf[block] ?? {})) n += Object.keys(byType).length;
  return n + Object.keys(tf.module ?? {}).length;
}

/** A task whose elements come from both libraries: refused before anything resolves. */
function mixedConstructs(taskName: string, cdks: Map<CdkName, string>): CtsError {
  const [[a, pathA], [b, pathB]] = [...cdks.entries()] as [[CdkName, string], [CdkName, string]];
  return new CtsError(
    "TASK_CDK_MIXED",
    "usage",
    `mixes two CDK libraries: '${pathA}' is built with ${a} and '${pathB}' with ${b}. A task's constructs must all come from one library (cts synthesizes each task on one): import them all from ${CDK_PACKAGES[b]}, or all from ${CDK_PACKAGES[a]}.`,
    { task: taskName, detail: { cdks: [a, b], constructPaths: [pathA, pathB] } },
  );
}

/** cdktf merges elements with the same address silently; we refuse. */
function assertUniqueAddresses(taskName: string, stack: TerraformStack, lib: typeof Cdktf): void {
  const seen = new Map<string, string>();
  for (const c of stack.node.findAll()) {
    const address = addressOf(c, lib);
    if (!address) continue;
    const prev = seen.get(address);
    if (prev)
      throw new CtsError(
        "TASK_ID_COLLISION",
        "usage",
        `constructs '${prev}' and '${c.node.path}' both synthesize to ${address}. Give them distinct ids (use constructId() for ids built from catalog data).`,
        { task: taskName, detail: { constructPath: c.node.path, address } },
      );
    seen.set(address, c.node.path);
  }
}

/** The Terraform address an element synthesizes to (undefined for non-elements). */
function addressOf(c: IConstruct, lib: typeof Cdktf): string | undefined {
  const { TerraformElement, TerraformStack, TerraformProvider, TerraformResource, TerraformDataSource, TerraformOutput } = lib;
  if (!TerraformElement.isTerraformElement(c) || TerraformStack.isStack(c)) return undefined;
  if (TerraformProvider.isTerraformProvider(c)) return `provider.${c.terraformResourceType}.${c.alias ?? ""}`;
  if (TerraformResource.isTerraformResource(c)) return `${c.terraformResourceType}.${c.friendlyUniqueId}`;
  if (TerraformDataSource.isTerraformDataSource(c)) return `data.${c.terraformResourceType}.${c.friendlyUniqueId}`;
  if (typeof (c as Partial<TerraformModule>).interpolationForOutput === "function") return `module.${c.friendlyUniqueId}`;
  if (TerraformOutput.isTerraformOutput(c)) return `output.${c.friendlyUniqueId}`;
  return undefined;
}

function lastConstructPath(stack: TerraformStack): string | undefined {
  const all = stack.node.findAll();
  return all.length > 1 ? all[all.length - 1]!.node.path : undefined;
}
