import { isAbsolute, join, resolve } from "node:path";
import type { LoadedConfig } from "../config/load.ts";
import { parseDuration } from "../time/duration.ts";
import type { TerraformDriverConfig } from "../config/types.ts";
import { defaultTerraformBinary } from "../terraform/executable.ts";
import type { Logger } from "../log/logger.ts";
import type { Metrics } from "../metrics/metrics.ts";
import { knownSecrets } from "../secrets/redactor.ts";
import { backendSecretEnv } from "../config/backend-secrets.ts";
import { createTerraformDriver } from "../terraform/driver.ts";
import { ownWorkingDirs } from "../synth/paths.ts";
import { formatDuration } from "../terraform/failures.ts";
import { stateLockWaitText, type StateLockWait } from "../terraform/lock-wait.ts";
import type { LocalTerraformDriver, WarmProviderOptions } from "../terraform/types.ts";
import { resolveTerraformCloudToken, terraformCloudSettings } from "../config/terraform-cloud.ts";
import { createTfcDriver, type TfcDriver } from "../tfc/driver.ts";
import type { TfcTlsOptions } from "../tfc/tls.ts";
import type { Driver } from "../driver/types.ts";

/** What the driver gets from the composition root besides the config. */
export interface DriverSetup {
  /** The working root (driver.terraform.workingDir resolved against the config's dir). */
  root: string;
  /** Environment every Terraform command gets (the Consul address, token, TLS for the backend). */
  env: Record<string, string>;
  log: Logger;
  metrics: Metrics;
  /** How long the runtime keeps retrying a run whose state stays locked (the retry policy's lockWaitMs). */
  lockRetryMs?: number;
}

/** The Terraform driver `driver.terraform` describes (durations in ms, defaults filled in). */
export function terraformDriverFor(loaded: LoadedConfig, o: DriverSetup): LocalTerraformDriver {
  const tf = loaded.config.driver?.terraform ?? {};
  const root = o.root;
  const backendEnv = backendSecretEnv(tf.backend);
  for (const v of Object.values(backendEnv)) knownSecrets.add(v);
  return createTerraformDriver({
    binary: tf.binary ?? defaultTerraformBinary(),
    workingDir: root,
    taskDirs: ownWorkingDirs(loaded.dir, loaded.config.tasks),
    ...(tf.cliConfigFile ? { cliConfigFile: tf.cliConfigFile } : {}),
    pluginCacheDir: tf.pluginCacheDir ?? join(root, ".plugin-cache"),
    env: o.env,
    ...(Object.keys(backendEnv).length ? { backendEnv } : {}),
    ...(tf.timeout !== undefined ? { defaultTimeoutMs: parseDuration(tf.timeout) ?? 30 * 60_000 } : {}),
    ...(tf.lockTimeout !== undefined ? { lockTimeoutMs: parseDuration(tf.lockTimeout) } : {}),
    commandTimeouts: Object.fromEntries(Object.entries(tf.commandTimeouts ?? {}).map(([k, v]) => [k, v === undefined ? undefined : parseDuration(v)])),
    log: terraformOutputLog(tf, o.log),
    // One redaction at the source: no Terraform or provider text leaves the driver unscrubbed.
    redact: (text) => knownSecrets.redact(text),
    notice: (line) => o.log.warn(line),
    taskNotice: (task, line) => o.log.info(`task '${task}': ${line}`, { task }),
    onStateLockWait: (w) => o.log.warn(stateLockWaitLine(w, o.lockRetryMs), { task: w.task, ...(w.lock?.ID ? { lock_id: w.lock.ID } : {}) }),
    debugLog: (task, line) => o.log.debug(`[${task}] ${line}`, { task }),
    warmProviders: warmProviderOptions(tf.warmProviders),
    ...(tf.warmPages === false ? { warmPages: false } : {}),
    metrics: o.metrics,
  });
}

/**
 * The warning a run logs when it starts waiting for a state lock someone else holds (a paused
 * member's tofu finishing its apply, a person running tofu by hand): who holds it and for how long
 * cts waits, so a run that seems stuck says why.
 */
export function stateLockWaitLine(w: StateLockWait, lockRetryMs?: number): string {
  const then = lockRetryMs ? `, then the run is retried for up to ${formatDuration(lockRetryMs)}` : "";
  return `task '${w.task}': ${stateLockWaitText(w)}${then}. Nothing is applied for the task until the holder releases it.`;
}

/**
 * Where Terraform's own lines go: info with `driver.terraform.log: true`, else debug, as CTS
 * leaves them out of its log unless `log = true`. Each is a log write (a dozen per apply).
 */
export function terraformOutputLog(tf: Pick<TerraformDriverConfig, "log">, log: Logger): (task: string, line: string) => void {
  if (tf.log === true) return (task, line) => log.info(`[${task}] ${line}`, { task });
  return (task, line) => log.debug(`[${task}] ${line}`, { task });
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

/** The driver the config asks for: Terraform Cloud with `driver.terraformCloud`, else the local one. */
export function driverFor(loaded: LoadedConfig, o: DriverSetup): Driver {
  return loaded.config.driver?.terraformCloud ? tfcDriverFor(loaded, o) : terraformDriverFor(loaded, o);
}

/**
 * The Terraform Cloud driver `driver.terraformCloud` describes: the TFC_* fallbacks applied, the
 * token read now (from the config, its file or variable, or TFC_TOKEN) and registered with the
 * redactor, TLS files resolved against the config's dir. Runs log at info, as CTS logs its TFC runs.
 */
export function tfcDriverFor(loaded: LoadedConfig, o: Pick<DriverSetup, "root" | "log" | "metrics">): TfcDriver {
  const tfc = loaded.config.driver!.terraformCloud!;
  const s = terraformCloudSettings(tfc);
  const token = resolveTerraformCloudToken(tfc, loaded.dir);
  const path = (p: string | undefined) => (p === undefined ? undefined : isAbsolute(p) ? p : resolve(loaded.dir, p));
  const tls: TfcTlsOptions | undefined = tfc.tls
    ? Object.fromEntries(Object.entries({ ...tfc.tls, caCert: path(tfc.tls.caCert), caPath: path(tfc.tls.caPath), cert: path(tfc.tls.cert), key: path(tfc.tls.key) }).filter(([, v]) => v !== undefined))
    : undefined;
  return createTfcDriver({
    client: { hostname: s.hostname, token, ...(tls ? { tls } : {}) },
    organization: s.organization,
    prefix: s.prefix,
    tags: s.tags,
    tagsAllowlist: s.tagsAllowlist,
    tagsDenylist: s.tagsDenylist,
    workingDir: o.root,
    runTimeoutMs: s.runTimeoutMs,
    lockTimeoutMs: s.lockTimeoutMs,
    pollIntervalMs: s.pollIntervalMs,
    ...(tfc.requiredProviders ? { requiredProviders: tfc.requiredProviders } : {}),
    log: (task, line) => o.log.info(`[${task}] ${line}`, { task }),
    metrics: o.metrics,
  });
}
