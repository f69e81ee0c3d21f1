import { cp, mkdir, mkdtemp, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { basename, isAbsolute, join, resolve } from "node:path";
import { CtsError } from "../errors/cts-error.ts";

/** `required_providers` entries added to every uploaded root module (driver.terraformCloud.requiredProviders). */
export type RequiredProviders = Record<string, { source?: string; version?: string }>;

/** A staged configuration: the directory to upload, and how to remove it. */
export interface StagedModule {
  dir: string;
  /** The JSON as uploaded (backend removed, local module sources rewritten). */
  json: string;
  dispose(): Promise<void>;
}

const LOCAL_SOURCE = /^(\.\.?\/|\/)/;
/** What is never copied with a local module: provider caches, VCS metadata, local state. */
const SKIPPED = /(^|\/)(\.git|\.terraform)(\/|$)|(^|\/)terraform\.tfstate(\.backup)?$/;

/**
 * The root module a task's run uploads, in a fresh temporary directory: `main.tf.json` holding the
 * task's synthesized JSON without its `backend` (the workspace keeps the state), with the
 * configured `required_providers` added, and each local module it calls (a ModuleTask's local
 * `module`, a task class's local TerraformHclModule) copied under `modules/<name>/` with its source
 * rewritten to that copy, since a remote run sees only what is uploaded. Local sources are
 * resolved from `taskDir`, where synthesis writes them relative to.
 */
export async function stageRootModule(json: string, taskDir: string, requiredProviders: RequiredProviders = {}, task = ""): Promise<StagedModule> {
  let tf: Record<string, any>;
  try {
    tf = JSON.parse(json);
  } catch (cause) {
    throw new CtsError("CTS_INTERNAL", "internal", "the synthesized configuration is not JSON", { task, cause });
  }
  const dir = await mkdtemp(join(tmpdir(), "cts-tfc-upload-"));
  const dispose = () => rm(dir, { recursive: true, force: true });
  try {
    if (tf.terraform && typeof tf.terraform === "object") {
      delete tf.terraform.backend;
      delete tf.terraform.cloud;
      if (tf["//"]?.metadata?.backend) delete tf["//"].metadata.backend;
      const required = { ...requiredProviders, ...(tf.terraform.required_providers ?? {}) };
      if (Object.keys(required).length) tf.terraform.required_providers = required;
      if (Object.keys(tf.terraform).length === 0) delete tf.terraform;
    } else if (Object.keys(requiredProviders).length) tf.terraform = { required_providers: { ...requiredProviders } };
    const copied = new Map<string, string>();
    for (const [name, block] of Object.entries<Record<string, unknown>>(tf.module ?? {})) {
      const source = block?.source;
      if (typeof source !== "string" || !LOCAL_SOURCE.test(source)) continue;
      const from = isAbsolute(source) ? source : resolve(taskDir, source);
      let to = copied.get(from);
      if (!to) {
        to = `./modules/${safeName(name, copied.size)}`;
        if (!(await stat(from).catch(() => undefined))?.isDirectory())
          throw new CtsError("TASK_INVALID", "usage", `module '${name}' has the local source ${source} (${from}), which is not a directory; a remote run needs the module's files. Fix the task's module path.`, { task });
        await mkdir(join(dir, "modules"), { recursive: true });
        await cp(from, join(dir, to), { recursive: true, filter: (src) => !SKIPPED.test(src.slice(from.length).replace(/\\/g, "/")) });
        copied.set(from, to);
      }
      block.source = to;
    }
    const uploaded = JSON.stringify(tf, null, 2);
    await writeFile(join(dir, "main.tf.json"), uploaded, { mode: 0o600 });
    return { dir, json: uploaded, dispose };
  } catch (err) {
    await dispose();
    throw err;
  }
}

function safeName(name: string, n: number): string {
  const base = basename(name).replace(/[^A-Za-z0-9_-]/g, "_");
  return base ? `${base}-${n}` : `module-${n}`;
}
