import { createHash, randomUUID } from "node:crypto";
import { existsSync } from "node:fs";
import { register as registerHook } from "node:module";
import { dirname, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { apiAccessProblems } from "./api-access.ts";
import { CtsError, isErrorCode, messageOf } from "../errors/cts-error.ts";
import { userCode } from "../errors/user-frames.ts";
import type { Task } from "../task/task.ts";
import type { Condition, TaskInputs } from "../task/conditions.ts";
import { className, duplicateNameProblems, shapeProblems } from "../task/shape.ts";
import { chainProblems } from "../task/chains.ts";
import { throwProblems, type Problem } from "../errors/problems.ts";
import { bufferProblems, driftCheckProblems, taskProblems } from "../task/validate.ts";
import { guardProblems } from "../task/guards.ts";
import { notificationProblems } from "./notifications.ts";
import type { CtsConfig } from "./types.ts";
import { parseDuration } from "../time/duration.ts";
import { haProblems } from "./ha-problems.ts";
import type { ModuleTask } from "../task/module-task.ts";
import { isCtsConfigPath } from "./config-path.ts";
import { workingDirProblems, workingRoot } from "./working-dirs.ts";
import { terraformCloudDriverProblems, terraformCloudWorkspaceProblems } from "./terraform-cloud.ts";
import { serviceRegistrationProblems } from "./service-registration.ts";
import { consulTransportProblems } from "./consul-transport.ts";
import { consulAuthProblems } from "./consul-auth.ts";
import { SYSLOG_FACILITIES, syslogPriority } from "../log/syslog.ts";
import { registerLazyBindings } from "../cdktf/lazy-bindings.ts";

/** The config file names tried in order when none is given. */
export const DEFAULT_CONFIG_FILES = ["cts.config.ts", "cts.config.mts", "cts.config.js", "cts.config.mjs"];

/** A loaded, validated configuration and where it came from. */
export interface LoadedConfig {
  config: CtsConfig;
  /** Absolute path of the file. */
  file: string;
  /** Its directory: relative paths in the config are resolved from here (a CTS config: the working directory, as CTS). */
  dir: string;
  /** A CTS HCL/JSON config: every file, in merge order (the synthesis worker loads them again). */
  ctsFiles?: string[];
  /** CTS keys accepted for compatibility that have no effect here (logged at start). */
  warnings?: string[];
  /** CTS's log_level. */
  logLevel?: "trace" | "debug" | "info" | "warn" | "error";
}

/** Finds the config file: the given path, or cts.config.ts in `cwd`. */
export function findConfigFile(path: string | undefined, cwd = process.cwd()): string {
  if (path) {
    const abs = resolve(cwd, path);
    if (!existsSync(abs)) throw new CtsError("CONFIG_NOT_FOUND", "usage", `Config file '${path}' does not exist. Pass --config <file> or run \`cts init\`.`);
    return abs;
  }
  for (const name of DEFAULT_CONFIG_FILES) {
    const abs = resolve(cwd, name);
    if (existsSync(abs)) return abs;
  }
  throw new CtsError("CONFIG_NOT_FOUND", "usage", `No cts.config.ts in ${cwd}. Pass --config <file> or run \`cts init\` to create one.`);
}

/**
 * Loads `cts.config.ts` (TypeScript, no build step) and validates it. A `.hcl` or `.json` file, a
 * directory, or several paths are read as a CTS configuration (src/cts/config/load.ts).
 */
export async function loadConfig(path?: string | string[], cwd = process.cwd()): Promise<LoadedConfig> {
  const paths = Array.isArray(path) ? path : path ? [path] : [];
  if (paths.length > 1 || (paths[0] !== undefined && isCtsConfigPath(paths[0]))) {
    // The HCL reader (and its WebAssembly parser) loads only for a CTS config.
    const { readCtsConfig } = await import("../cts/config/load.ts");
    const cts = await readCtsConfig(paths, cwd);
    validateConfig(cts.config, cts.files[0]!, cwd);
    return { config: cts.config, file: cts.files[0]!, dir: cwd, ctsFiles: cts.files, warnings: cts.warnings, ...(cts.logLevel ? { logLevel: cts.logLevel } : {}) };
  }
  const file = findConfigFile(paths[0], cwd);
  let mod: { default?: unknown };
  try {
    // Loaded on use: a daemon's main thread never evaluates a TypeScript config (src/synth/daemon-config.ts).
    // As tsx's tsImport does (CommonJS and ESM hooks in one namespace), with our namespace.
    const [{ register: registerCjs }, { register }] = await Promise.all([import("tsx/cjs/api"), import("tsx/esm/api")]);
    const namespace = namespaceFor(file);
    registerCjs({ namespace });
    // After tsx's CommonJS hooks, so the lazy roots see (and keep) the namespace query tsx adds.
    registerLazyBindings();
    const api = register({ namespace });
    shareOwnModules();
    mod = await api.import(pathToFileURL(file).href, import.meta.url);
  } catch (cause) {
    throw loadError(file, cause);
  }
  // A config outside an ESM package is loaded as CommonJS, whose default export arrives wrapped once more.
  let config = (mod.default ?? (mod as { config?: unknown }).config) as (CtsConfig & { default?: CtsConfig }) | undefined;
  if (config && (config as Partial<CtsConfig>).tasks === undefined && config.default) config = config.default;
  // defineConfig() refused unknown keys already; a default export written without it is checked here.
  const unknownKeys = (await import("./define-config.ts")).configOptionsError(config, file);
  if (unknownKeys) throw unknownKeys;
  validateConfig(config, file);
  await readModuleVariableFiles(config, dirname(file));
  return { config: config!, file, dir: dirname(file) };
}

/** cts's own modules (the folder above this one: dist/, or src/ from the sources). */
const OWN_ROOT = new URL("../", import.meta.url).href;

/**
 * tsx loads a config and everything it imports in the config's namespace, `cdktf-sync` included:
 * a second copy of cts's own modules (its index and what it imports: the task model, the config
 * checks, the HCL reader's module, handlebars, pino…), each resolved and loaded again through the
 * loader thread, although this thread has most of them loaded already. This hook, run before
 * tsx's answer is used, takes the namespace off cts's own modules: the config gets the thread's
 * copy. The user's files keep theirs (their compiled-file cache and a fresh read of an edited
 * file depend on it). Registered after each namespace's tsx hooks, so it sees their answers.
 */
function shareOwnModules(): void {
  const hook = `const root = ${JSON.stringify(OWN_ROOT)};
export async function resolve(specifier, context, next) {
  const r = await next(specifier, context);
  if (!r.url.startsWith(root) || !r.url.includes("tsx-namespace=")) return r;
  const url = new URL(r.url);
  url.searchParams.delete("tsx-namespace");
  return { ...r, url: url.href };
}`;
  registerHook(`data:text/javascript,${encodeURIComponent(hook)}`);
}

/** How often each config file was loaded in this thread. */
const loads = new Map<string, number>();

/**
 * The tsx namespace a config loads in. tsx keys its disk cache of compiled files by the module's
 * URL, which carries the namespace: a random one per load (tsImport's) misses that cache on every
 * start, compiles every TypeScript file again and leaves ~30 new files in /tmp/tsx-<uid> each time.
 * The first load of a file in a thread (a daemon's worker, a `cts once`) takes a namespace fixed by
 * its path, so starts after the first reuse the compiled files (tsx checks their content); loading
 * the same file again in one thread takes a fresh namespace, so an edited file is read anew.
 */
function namespaceFor(file: string): string {
  const n = loads.get(file) ?? 0;
  loads.set(file, n + 1);
  return n === 0 ? `cts-config-${createHash("sha256").update(file).digest("hex").slice(0, 16)}` : `cts-config-${randomUUID()}`;
}

/** ModuleTask `variableFiles` are read once, when the config loads (as CTS reads variable_files). */
async function readModuleVariableFiles(config: CtsConfig, dir: string): Promise<void> {
  for (const task of config.tasks) {
    const t = task as Partial<ModuleTask>;
    if (!t.variableFiles?.length || t.fileVariables !== undefined) continue;
    const { readVariableFiles } = await import("../cts/config/tasks.ts");
    t.fileVariables = await readVariableFiles(t.variableFiles.map((f) => resolve(dir, f)));
  }
}

/** Validates a config object; throws one error naming the file, every bad field and its fix. */
export function validateConfig(config: CtsConfig | undefined, file: string, dir: string = dirname(file)): asserts config is CtsConfig {
  if (!config || typeof config !== "object")
    throw new CtsError("CONFIG_INVALID", "usage", `${file}: has no default export. End it with \`export default defineConfig({ tasks: [...] })\`.`);
  const problems: Problem[] = [];
  if (!Array.isArray(config.tasks)) problems.push({ field: "tasks", message: "must be an array of tasks. Add `tasks: [new MyTask()]`." });
  const tasks = Array.isArray(config.tasks) ? config.tasks : [];
  tasks.forEach((task, i) => {
    const shape = shapeProblems(task);
    for (const p of shape) problems.push({ field: p.field ? `tasks[${i}].${p.field}` : `tasks[${i}]`, message: p.message });
    if (shape.length === 0) for (const p of taskProblems(task as Task<Condition, TaskInputs>)) problems.push({ field: `tasks[${i}].${p.field}`, message: `${p.message} (class ${className(task)})` });
    const workspace = (task as Partial<Task<Condition, TaskInputs>> | undefined)?.terraformCloudWorkspace;
    if (workspace !== undefined) problems.push(...terraformCloudWorkspaceProblems(workspace, `tasks[${i}].terraformCloudWorkspace`));
  });
  problems.push(...terraformCloudDriverProblems(config.driver));
  problems.push(...duplicateNameProblems(tasks));
  // Task chains: every name in an `after` is a task here, and no chain runs in a circle.
  for (const p of chainProblems(tasks.filter((t): t is Task<Condition, TaskInputs> => !!t && typeof (t as { name?: unknown }).name === "string" && Array.isArray((t as { after?: unknown }).after))))
    problems.push({ field: `tasks[${tasks.findIndex((t) => (t as { name?: unknown } | null)?.name === (p.task))}].${p.field}`, message: p.message });
  const tfDir = config.driver?.terraform?.workingDir;
  const places = tasks.filter((t): t is Task<Condition, TaskInputs> => !!t && typeof t === "object" && typeof (t as { name?: unknown }).name === "string");
  if (tfDir === undefined || typeof tfDir === "string") problems.push(...workingDirProblems(dir, workingRoot(dir, tfDir), places, file));
  if (config.bufferPeriod) problems.push(...bufferProblems(config.bufferPeriod, "bufferPeriod"));
  if (config.driftCheck !== undefined) problems.push(...driftCheckProblems(config.driftCheck, "driftCheck"));
  if (config.guards !== undefined) {
    problems.push(...guardProblems(config.guards, "guards"));
    if ((config.guards as { check?: unknown } | null)?.check !== undefined) problems.push({ field: "guards.check", message: "is a task's own guard: put the predicate in the task's `guards` (it runs with the task's code)." });
  }
  if (config.history !== undefined) problems.push(...historyProblems(config.history));
  if (config.concurrency !== undefined && (!Number.isInteger(config.concurrency) || config.concurrency < 1))
    problems.push({ field: "concurrency", message: `must be a whole number >= 1 (got ${String(config.concurrency)}).` });
  const tf = config.driver?.terraform;
  if (tf?.binary !== undefined && (typeof tf.binary !== "string" || tf.binary === ""))
    problems.push({ field: "driver.terraform.binary", message: "must be \"tofu\", \"terraform\" or a path to one of them." });
  if (tf?.backend !== undefined && (typeof tf.backend !== "object" || Object.keys(tf.backend).length !== 1))
    problems.push({ field: "driver.terraform.backend", message: "must name exactly one backend, e.g. { consul: { path: \"consul-terraform-sync/terraform\" } }." });
  for (const [field, value] of [["timeout", tf?.timeout], ["lockTimeout", tf?.lockTimeout], ...Object.entries(tf?.commandTimeouts ?? {}).map(([k, v]) => [`commandTimeouts.${k}`, v])] as const) {
    if (value !== undefined && parseDuration(value as string | number) === undefined)
      problems.push({ field: `driver.terraform.${field}`, message: `'${String(value)}' is not a duration. Use e.g. "90s" or "5m".` });
  }
  problems.push(...warmProviderProblems(tf?.warmProviders));
  if (tf?.warmPages !== undefined && typeof tf.warmPages !== "boolean")
    problems.push({ field: "driver.terraform.warmPages", message: `must be true or false (got ${JSON.stringify(tf.warmPages)}).` });
  const addr = config.consul?.address;
  if (addr !== undefined && (typeof addr !== "string" || !/^(https?:\/\/)?[^\s/]+(:\d+)?\/?$/.test(addr)))
    problems.push({ field: "consul.address", message: `'${String(addr)}' is not host:port or a URL. Use e.g. "127.0.0.1:8500".` });
  const port = config.api?.port;
  if (port !== undefined && (!Number.isInteger(port) || port < 0 || port > 65535)) problems.push({ field: "api.port", message: `must be 0-65535 (got ${String(port)}).` });
  problems.push(...apiAccessProblems(config.api));
  problems.push(...serviceRegistrationProblems(config.consul?.serviceRegistration));
  problems.push(...consulTransportProblems(config.consul?.transport));
  problems.push(...consulAuthProblems(config.consul?.auth));
  problems.push(...syslogProblems(config.syslog));
  problems.push(...haProblems(config));
  problems.push(...notificationProblems(config.notifications));
  for (const field of ["logFormat", "log_format"] as const) {
    const v = config[field];
    if (v !== undefined && v !== "text" && v !== "json") problems.push({ field, message: `must be "text" or "json" (got ${JSON.stringify(v)?.slice(0, 40)}).` });
  }
  if (config.logFormat !== undefined && config.log_format !== undefined && config.logFormat !== config.log_format)
    problems.push({ field: "log_format", message: "says something else than logFormat. Keep one of them." });
  throwProblems(file, problems);
}

/** What is wrong with `driver.terraform.warmProviders`. */
function warmProviderProblems(warm: unknown): Problem[] {
  if (warm === undefined || warm === false) return [];
  const field = "driver.terraform.warmProviders";
  if (typeof warm !== "object" || warm === null || Array.isArray(warm))
    return [{ field, message: "must be false or { maxProcesses, maxRunsPerProcess, idleTimeout, maxRssMb }." }];
  const problems: Problem[] = [];
  const w = warm as Record<string, unknown>;
  for (const [k, v] of Object.entries(w)) {
    if (k === "idleTimeout") {
      if (v !== undefined && parseDuration(v as string | number) === undefined) problems.push({ field: `${field}.idleTimeout`, message: `'${String(v)}' is not a duration. Use e.g. "5m".` });
    } else if (k === "maxProcesses" || k === "maxRunsPerProcess" || k === "maxRssMb") {
      if (v !== undefined && (!Number.isInteger(v) || (v as number) < (k === "maxProcesses" ? 0 : 1)))
        problems.push({ field: `${field}.${k}`, message: `must be a whole number >= ${k === "maxProcesses" ? 0 : 1} (got ${String(v)}).` });
    } else problems.push({ field: `${field}.${k}`, message: "is not a setting. Use maxProcesses, maxRunsPerProcess, idleTimeout or maxRssMb." });
  }
  return problems;
}

/** Why a config file did not load, with the fix: a missing package, a task class built wrongly, or an error in the file. */
function loadError(file: string, cause: unknown): CtsError {
  // The config gets its own copy of cts's modules (tsx loads it in a namespace): match errors by shape.
  const c = cause as { code?: unknown; category?: unknown; message?: unknown } | undefined;
  if (c && typeof c.code === "string" && isErrorCode(c.code) && (c.category === "usage" || c.category === "external" || c.category === "internal"))
    return new CtsError(c.code, c.category, `${file}: ${messageOf(cause)}`, { cause, detail: (cause as { detail?: Record<string, unknown> }).detail ?? {} });
  const missing = c?.code === "ERR_MODULE_NOT_FOUND" ? /Cannot find package '([^']+)'/.exec(messageOf(cause))?.[1] : undefined;
  if (missing)
    return new CtsError(
      "CONFIG_PACKAGE_MISSING",
      "usage",
      `${file}: imports '${missing}', which is not installed in that project. Run \`npm install ${missing}\` in ${dirname(file)} (cts resolves every package from the project of the config file).`,
      { cause },
    );
  // A task constructor or the config's own code threw: name the user's line, not cts's.
  const where = userCode(cause);
  return new CtsError("CONFIG_LOAD_FAILED", "usage", `${file}: could not load: ${messageOf(cause)}${where ? ` at ${where.at}` : ""}. Fix the error in the file (it is TypeScript, loaded with tsx).`, {
    cause,
    detail: where ? { at: where.at, userStack: where.frames } : {},
  });
}

/** `syslog`: a known facility, a non-empty name and socket path. */
function syslogProblems(syslog: CtsConfig["syslog"]): Problem[] {
  if (syslog === undefined) return [];
  const problems: Problem[] = [];
  if (syslog.facility !== undefined && (typeof syslog.facility !== "string" || syslogPriority(syslog.facility) === undefined))
    problems.push({ field: "syslog.facility", message: `'${String(syslog.facility)}' is not a facility. Use one of ${Object.keys(SYSLOG_FACILITIES).join(", ")}.` });
  for (const k of ["name", "socket"] as const)
    if (syslog[k] !== undefined && (typeof syslog[k] !== "string" || syslog[k] === "")) problems.push({ field: `syslog.${k}`, message: "must be a non-empty string." });
  if (syslog.enabled !== undefined && typeof syslog.enabled !== "boolean") problems.push({ field: "syslog.enabled", message: "must be true or false." });
  return problems;
}

/** Problems of `history` (`{ keep?: 1–1000, maxAge?: duration }`). */
function historyProblems(h: unknown): Problem[] {
  if (!h || typeof h !== "object" || Array.isArray(h)) return [{ field: "history", message: 'must be { keep?: number, maxAge?: "720h" }.' }];
  const { keep, maxAge, ...rest } = h as { keep?: unknown; maxAge?: unknown };
  const p: Problem[] = [];
  for (const k of Object.keys(rest)) p.push({ field: `history.${k}`, message: "is not a setting of history. Use keep or maxAge." });
  if (keep !== undefined && !(typeof keep === "number" && Number.isInteger(keep) && keep >= 1 && keep <= 1000))
    p.push({ field: "history.keep", message: `must be a whole number from 1 to 1000 (got ${String(keep)}).` });
  const ms = typeof maxAge === "string" || typeof maxAge === "number" ? parseDuration(maxAge) : undefined;
  if (maxAge !== undefined && !(ms !== undefined && ms > 0)) p.push({ field: "history.maxAge", message: `'${String(maxAge)}' is not a positive duration. Use e.g. "720h" (30 days).` });
  return p;
}
