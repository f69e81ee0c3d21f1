import { hostname } from "node:os";
import { join } from "node:path";
import type { CtsConfig, TerraformDriverConfig } from "../config/types.ts";
import type { LoadedConfig } from "../config/load.ts";
import { parseDuration } from "../config/duration.ts";
import type { Source, SourceData } from "../consul/types.ts";
import { createConsulApi, type ConsulApi } from "../consul/client.ts";
import { createReloadingConsulApi } from "../consul/reloading-api.ts";
import { readTokenFile, watchTokenFile } from "../consul/token-file.ts";
import { consulEnvForTerraform, resolveConsulConnection, type ConsulConnection } from "../consul/connection.ts";
import { createCatalogReader } from "../consul/reader.ts";
import { createWatcher } from "../watch/watcher.ts";
import { createTerraformDriver } from "../terraform/driver.ts";
import type { LocalTerraformDriver, WarmProviderOptions } from "../terraform/types.ts";
import { createLogger, redactSecret, type Logger } from "../log.ts";
import { knownSecrets } from "../secrets/redactor.ts";
import { inProcessSynthesizer, workerSynthesizer } from "../synth/synthesizer.ts";
import { workingRoot } from "../synth/paths.ts";
import { Controller } from "./controller.ts";
import { defaultTerraformBinary } from "../doctor/executable.ts";

/** The token file a config names (consul.tokenFile, else CONSUL_HTTP_TOKEN_FILE), if any. */
export function tokenFileFor(config: CtsConfig): string | undefined {
  return config.consul?.tokenFile ?? (process.env.CONSUL_HTTP_TOKEN_FILE || undefined);
}

/** The Consul connection a config describes (env fallbacks as CTS: CONSUL_HTTP_ADDR, CONSUL_HTTP_TOKEN…). */
export function consulConnectionFor(config: CtsConfig, tokenOverride?: string): ConsulConnection {
  const c = config.consul ?? {};
  const file = tokenFileFor(config);
  const token = tokenOverride ?? c.token ?? (file ? readTokenFile(file) : undefined);
  const conn = resolveConsulConnection({
    ...(c.address !== undefined ? { address: c.address } : {}),
    ...(token !== undefined ? { token } : {}),
    ...(c.tls ? { tls: c.tls } : {}),
  });
  redactSecret(conn.token);
  return conn;
}

/** A one-shot reader of Consul data built from the config (for `cts synth`). */
export function createConsulReader(config: CtsConfig): (source: Source) => Promise<SourceData> {
  const reader = createCatalogReader(createConsulApi(consulConnectionFor(config)));
  return (source) => reader.read(source);
}

/** How the runtime is put together for one command. */
export interface RuntimeOptions {
  /** "watch" synthesizes in a recycled worker and watches; "once"/"inspect" read once, in process. */
  mode: "watch" | "once" | "inspect";
  bufferOff?: boolean;
  log?: Logger;
  /** Overrides for tests (short blocking waits). */
  watchTiming?: { waitMs?: number };
  /** Retries after a failed apply (default 2) and the first delay (default 1 s). */
  retries?: number;
  retryDelayMs?: number;
}

/** Everything a running cts holds, for the CLI and the API. */
export interface Runtime {
  controller: Controller;
  consul: ConsulApi;
  /** The connection as first resolved (a rotated token replaces it inside the client). */
  connection: ConsulConnection;
  driver: LocalTerraformDriver;
  log: Logger;
  /** This instance's id. */
  id: string;
  close(): Promise<void>;
}

/** The composition root: real Consul client, watcher, Terraform driver and synthesizer. */
export function createRuntime(loaded: LoadedConfig, opts: RuntimeOptions): Runtime {
  const { config } = loaded;
  const log = opts.log ?? createLogger();
  let connection = consulConnectionFor(config);
  const consul = createReloadingConsulApi(connection);
  // Terraform reads the token from its environment at every command; this object is that env.
  const terraformEnv = consulEnvForTerraform(connection);
  const tokenFile = config.consul?.token === undefined ? tokenFileFor(config) : undefined;
  const stopTokenWatch = tokenFile
    ? watchTokenFile(tokenFile, connection.token ?? "", (token) => {
        connection = consulConnectionFor(config, token);
        consul.setConnection(connection);
        for (const k of Object.keys(terraformEnv)) delete terraformEnv[k];
        Object.assign(terraformEnv, consulEnvForTerraform(connection));
        log.info(`consul: the token in ${tokenFile} changed; using the new one`);
      })
    : undefined;
  const tf = config.driver?.terraform ?? {};
  const root = workingRoot(loaded.dir, tf.workingDir);
  const tfLog = log.child("terraform");
  const driver = createTerraformDriver({
    binary: tf.binary ?? defaultTerraformBinary(),
    workingDir: root,
    ...(tf.cliConfigFile ? { cliConfigFile: tf.cliConfigFile } : {}),
    pluginCacheDir: tf.pluginCacheDir ?? join(root, ".plugin-cache"),
    env: terraformEnv,
    ...(tf.timeout !== undefined ? { defaultTimeoutMs: parseDuration(tf.timeout) ?? 30 * 60_000 } : {}),
    ...(tf.lockTimeout !== undefined ? { lockTimeoutMs: parseDuration(tf.lockTimeout) } : {}),
    commandTimeouts: Object.fromEntries(Object.entries(tf.commandTimeouts ?? {}).map(([k, v]) => [k, v === undefined ? undefined : parseDuration(v)])),
    log: (task, line) => tfLog.info(`[${task}] ${line}`, { task }),
    // One redaction at the source: no Terraform or provider text leaves the driver unscrubbed.
    redact: (text) => knownSecrets.redact(text),
    notice: (line) => tfLog.warn(line),
    debugLog: (task, line) => tfLog.debug(`[${task}] ${line}`, { task }),
    warmProviders: warmProviderOptions(tf.warmProviders),
  });
  const watcher =
    opts.mode === "watch"
      ? createWatcher(consul, {
          ...(opts.watchTiming ? { timing: opts.watchTiming } : {}),
          warn: (m) => log.warn(m),
        })
      : undefined;
  const synthesizer =
    opts.mode === "watch" ? workerSynthesizer() : inProcessSynthesizer((name) => config.tasks.find((t) => t.name === name));
  const controller = new Controller({
    loaded,
    reader: createCatalogReader(consul),
    driver,
    synthesizer,
    log: log.child("ctrl"),
    ...(watcher ? { watcher } : {}),
    ...(opts.bufferOff ? { bufferOff: true } : {}),
    ...(opts.retries !== undefined ? { retries: opts.retries } : {}),
    ...(opts.retryDelayMs !== undefined ? { retryDelayMs: opts.retryDelayMs } : {}),
  });
  return {
    controller,
    consul,
    connection,
    driver,
    log,
    id: config.id ?? `cts-${hostname()}`,
    async close() {
      stopTokenWatch?.();
      await controller.stop();
      watcher?.close();
      consul.close();
      // Warm provider processes end with the runtime (stop, SIGTERM, `once` finishing).
      await driver.close();
    },
  };
}

/** `driver.terraform.warmProviders` in the driver's terms (durations in ms). */
function warmProviderOptions(warm: TerraformDriverConfig["warmProviders"]): false | WarmProviderOptions {
  if (warm === false) return false;
  if (!warm) return {};
  const idle = warm.idleTimeout === undefined ? undefined : parseDuration(warm.idleTimeout);
  return {
    ...(warm.maxProcesses !== undefined ? { maxProcesses: warm.maxProcesses } : {}),
    ...(warm.maxRunsPerProcess !== undefined ? { maxRunsPerProcess: warm.maxRunsPerProcess } : {}),
    ...(idle !== undefined ? { idleTimeoutMs: idle } : {}),
    ...(warm.maxRssMb !== undefined ? { maxRssMb: warm.maxRssMb } : {}),
  };
}
