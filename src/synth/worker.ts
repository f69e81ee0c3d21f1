import { parentPort, workerData } from "node:worker_threads";
import { loadConfig, type LoadedConfig } from "../config/load.ts";
import { describeConfig } from "../config/description.ts";
import { CtsError } from "../errors/cts-error.ts";
import { ModuleTask } from "../task/module-task.ts";
import type { AnyTaskInput } from "../task/task.ts";
import { synthesizeTask, type SynthContext } from "./synthesize.ts";
import { withTokenScope } from "./token-scope.ts";
import { warmUpCdk } from "./warm-up.ts";
import { predicateReason, serializeError } from "./synthesizer.ts";
import type { PlanJson } from "../task/guards.ts";
import { knownSecrets } from "../secrets/redactor.ts";
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

type Request = (
  | { id: number; describe: string | string[] }
  | { id: number; warm: TaskRef }
  | { id: number; checkPlan: TaskRef; plan: PlanJson }
  | { id: number; ref: TaskRef; input: AnyTaskInput; ctx: SynthContext }
) & { secrets: string[] };

// The main thread's secrets, known before any code of the config runs here.
for (const s of (workerData as { secrets?: string[] } | undefined)?.secrets ?? []) knownSecrets.add(s);

// A task's own output (console.log) is forwarded by the main thread as it is: redact it here.
for (const stream of [process.stdout, process.stderr]) {
  const write = stream.write.bind(stream) as (chunk: unknown, ...rest: unknown[]) => boolean;
  stream.write = ((chunk: unknown, ...rest: unknown[]) =>
    write(typeof chunk === "string" ? knownSecrets.redact(chunk) : chunk instanceof Uint8Array ? knownSecrets.redact(Buffer.from(chunk).toString("utf8")) : chunk, ...rest)) as typeof stream.write;
}

/** How many of this thread's secrets the main thread has been sent. */
let sent = 0;

/**
 * Every reply carries the secrets this thread learned since the last one (`{{ env }}` values of a
 * CTS config, read while loading it): the main thread registers them before it settles the
 * request, so they are known before anything it logs about the answer.
 */
function reply(msg: Record<string, unknown>): void {
  const all = knownSecrets.values();
  const secrets = all.slice(sent);
  sent = all.length;
  parentPort!.postMessage({ ...msg, secrets, heapUsed: process.memoryUsage().heapUsed });
}

parentPort!.on("message", async (msg: Request) => {
  for (const s of msg.secrets) knownSecrets.add(s);
  if ("describe" in msg) {
    try {
      const key = Array.isArray(msg.describe) ? msg.describe.join("\n") : msg.describe;
      reply({ id: msg.id, ok: true, result: describeConfig(await configFor(key, msg.describe)) });
    } catch (err) {
      reply({ id: msg.id, ok: false, error: serializeError(err) });
    }
    return;
  }
  if ("checkPlan" in msg) {
    try {
      const reason = predicateReason(await taskFor(msg.checkPlan), msg.plan);
      reply({ id: msg.id, ok: true, result: reason === undefined ? {} : { reason } });
    } catch (err) {
      reply({ id: msg.id, ok: false, error: serializeError(err) });
    }
    return;
  }
  if ("warm" in msg) {
    // Loads the config and cdktf, and compiles cdktf's synthesis code on a stack of cts's own, so
    // the first real change finds them ready (warm-up.ts). The task's own code does not run.
    try {
      await taskFor(msg.warm);
      warmUpCdk();
      reply({ id: msg.id, ok: true, result: {}, warmed: true });
    } catch (err) {
      reply({ id: msg.id, ok: false, error: serializeError(err) });
    }
    return;
  }
  try {
    const task = await taskFor(msg.ref);
    reply({ id: msg.id, ok: true, result: withTokenScope(() => synthesizeTask(task, msg.input, msg.ctx)), synthesized: true });
  } catch (err) {
    reply({ id: msg.id, ok: false, error: serializeError(err), synthesized: true });
  }
});
