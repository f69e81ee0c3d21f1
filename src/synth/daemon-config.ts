import { restoreConfig } from "../config/description.ts";
import { isCtsConfigPath } from "../config/config-path.ts";
import { resolve } from "node:path";
import { findConfigFile, type LoadedConfig } from "../config/load.ts";
import { DeclaredTask } from "../task/declaration.ts";
import { workerSynthesizer, type WorkerSynthesizer } from "./synthesizer.ts";

/** A daemon's config and the synthesizer whose worker already holds it. */
export interface DaemonConfig {
  loaded: LoadedConfig;
  synthesizer: WorkerSynthesizer;
}

/**
 * Loads the config for `cts watch` so that the main thread never evaluates a TypeScript config:
 * the synthesis worker imports it (with cdktf and the provider bindings it pulls in), validates it
 * and sends the tasks back as plain data; the same worker then synthesizes the task classes. With
 * no task class to synthesize (module tasks only) the worker ends at once. A CTS HCL/JSON config is
 * read there too: the HCL parser's WebAssembly memory (about 35 MB) goes with the worker.
 */
export async function loadDaemonConfig(path?: string | string[], cwd = process.cwd()): Promise<DaemonConfig> {
  const paths = Array.isArray(path) ? path : path ? [path] : [];
  const cts = paths.length > 1 || (paths[0] !== undefined && isCtsConfigPath(paths[0]));
  const files = cts ? paths.map((p) => resolve(cwd, p)) : findConfigFile(paths[0], cwd);
  const synthesizer = workerSynthesizer();
  try {
    const loaded = restoreConfig(await synthesizer.describe(files));
    const taskClass = loaded.config.tasks.find((t) => t instanceof DeclaredTask);
    if (!taskClass) await synthesizer.release();
    // While the main thread starts the API and reads Consul, the worker loads cdktf and compiles
    // the task's code: the first sync does not wait for that after its data arrives.
    else synthesizer.prewarm({ kind: "config", configFile: loaded.file, name: taskClass.name, ...(loaded.ctsFiles ? { configFiles: loaded.ctsFiles } : {}) });
    return { loaded, synthesizer };
  } catch (err) {
    await synthesizer.close();
    throw err;
  }
}
