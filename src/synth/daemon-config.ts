import { restoreConfig } from "../config/description.ts";
import { isCtsConfigPath } from "../config/cts-files.ts";
import { findConfigFile, loadConfig, type LoadedConfig } from "../config/load.ts";
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
 * read on the main thread: it holds module tasks only.
 */
export async function loadDaemonConfig(path?: string | string[], cwd = process.cwd()): Promise<DaemonConfig> {
  const synthesizer = workerSynthesizer();
  const paths = Array.isArray(path) ? path : path ? [path] : [];
  if (paths.length > 1 || (paths[0] !== undefined && isCtsConfigPath(paths[0]))) return { loaded: await loadConfig(paths, cwd), synthesizer };
  const file = findConfigFile(paths[0], cwd);
  try {
    const loaded = restoreConfig(await synthesizer.describe(file));
    if (!loaded.config.tasks.some((t) => t instanceof DeclaredTask)) await synthesizer.release();
    return { loaded, synthesizer };
  } catch (err) {
    await synthesizer.close();
    throw err;
  }
}
