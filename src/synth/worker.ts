import { parentPort } from "node:worker_threads";
import { loadConfig, type LoadedConfig } from "../config/load.ts";
import { describeConfig } from "../config/description.ts";
import { CtsError } from "../errors.ts";
import { ModuleTask } from "../task/module-task.ts";
import type { AnyTaskInput } from "../task/task.ts";
import { synthesizeTask, type SynthContext } from "./synthesize.ts";
import { serializeError } from "./synthesizer.ts";
import type { TaskRef } from "./task-ref.ts";

// The worker loads each config file once and keeps its task instances for its lifetime.
const configs = new Map<string, Promise<LoadedConfig>>();

async function taskFor(ref: TaskRef) {
  if (ref.kind === "module") return new ModuleTask(ref.spec);
  const loaded = await configFor(ref.configFiles?.join("\n") ?? ref.configFile, ref.configFiles ?? ref.configFile);
  const task = loaded.config.tasks.find((t) => t.name === ref.name);
  if (!task) throw new CtsError("TASK_NOT_FOUND", "usage", `no task '${ref.name}' in ${ref.configFile}. Was it removed from the config?`);
  return task;
}

/** Loads a config once (a daemon's TypeScript config is loaded here first, then described to the main thread). */
function configFor(key: string, files: string | string[]) {
  let loading = configs.get(key);
  if (!loading) {
    loading = loadConfig(files);
    configs.set(key, loading);
    // A config that failed to load is tried again on the next request (the file may be fixed).
    loading.catch(() => configs.delete(key));
  }
  return loading;
}

type Request = { id: number; describe: string | string[] } | { id: number; ref: TaskRef; input: AnyTaskInput; ctx: SynthContext };

parentPort!.on("message", async (msg: Request) => {
  if ("describe" in msg) {
    try {
      const key = Array.isArray(msg.describe) ? msg.describe.join("\n") : msg.describe;
      const description = describeConfig(await configFor(key, msg.describe));
      parentPort!.postMessage({ id: msg.id, ok: true, result: description, heapUsed: process.memoryUsage().heapUsed });
    } catch (err) {
      parentPort!.postMessage({ id: msg.id, ok: false, error: serializeError(err), heapUsed: process.memoryUsage().heapUsed });
    }
    return;
  }
  try {
    const task = await taskFor(msg.ref);
    const result = synthesizeTask(task, msg.input, msg.ctx);
    parentPort!.postMessage({ id: msg.id, ok: true, result, heapUsed: process.memoryUsage().heapUsed });
  } catch (err) {
    parentPort!.postMessage({ id: msg.id, ok: false, error: serializeError(err), heapUsed: process.memoryUsage().heapUsed });
  }
});
