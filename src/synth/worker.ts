import { parentPort } from "node:worker_threads";
import { loadConfig, type LoadedConfig } from "../config/load.ts";
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
  const key = ref.configFiles?.join("\n") ?? ref.configFile;
  let loading = configs.get(key);
  if (!loading) {
    loading = loadConfig(ref.configFiles ?? ref.configFile);
    configs.set(key, loading);
  }
  const loaded = await loading;
  const task = loaded.config.tasks.find((t) => t.name === ref.name);
  if (!task) throw new CtsError("TASK_NOT_FOUND", "usage", `no task '${ref.name}' in ${ref.configFile}. Was it removed from the config?`);
  return task;
}

parentPort!.on("message", async (msg: { id: number; ref: TaskRef; input: AnyTaskInput; ctx: SynthContext }) => {
  try {
    const task = await taskFor(msg.ref);
    const result = synthesizeTask(task, msg.input, msg.ctx);
    parentPort!.postMessage({ id: msg.id, ok: true, result, heapUsed: process.memoryUsage().heapUsed });
  } catch (err) {
    parentPort!.postMessage({ id: msg.id, ok: false, error: serializeError(err), heapUsed: process.memoryUsage().heapUsed });
  }
});
