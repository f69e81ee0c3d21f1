import { mkdir } from "node:fs/promises";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import type { LoadedConfig } from "../config/load.ts";
import { CtsError, messageOf } from "../errors/cts-error.ts";
import { ERROR_CATALOGUE } from "../errors/catalogue.ts";
import type { ConsulTokenSource } from "../consul/token-source.ts";
import { createLogger } from "../log/logger.ts";
import { consulTokenFromVault } from "../watch/consul-token.ts";
import { userCodeFields } from "../errors/user-frames.ts";
import { createConsulProbe } from "./consul-probe.ts";
import { consulClientFor } from "../config/consul-connection.ts";
import type { ConsulClient } from "../consul/client.ts";
import { createCatalogReader } from "../consul/reader.ts";
import { backendSecretEnv } from "../config/backend-secrets.ts";
import { DEFAULT_BACKEND } from "../synth/backend.ts";
import { taskWorkingDir, workingRoot } from "../synth/paths.ts";
import { synthesizeTask } from "../synth/synthesize.ts";
import { taskFilterError } from "../task/filter-error.ts";
import { fieldOf, allSources } from "../task/sources.ts";
import type { AnyTaskInput } from "../task/task.ts";
import { createCommandRunner } from "../terraform/command-runner.ts";
import { fail, pass, type CheckResult } from "./check.ts";
import { checkConsulReachable, checkSession, checkStateWrite, checkTaskReads } from "./consul-checks.ts";
import { binaryIdentity, identityText } from "../terraform/version.ts";
import { checkApiPort, checkProviders, checkTerraformBinary, checkWorkingDir, checkWorkingDirBinaries } from "./local-checks.ts";
import { checkTaskFolders } from "./task-folders.ts";
import { checkTerraformCloud } from "./tfc-checks.ts";
import { checkVault } from "./vault-checks.ts";
import { vaultUseFor } from "../config/vault-settings.ts";
import { taskTemplateDependencies } from "../task/provider-templates.ts";

/** Runs every check for a loaded config, in order; `onResult` sees each as it finishes. */
export async function runDoctor(
  loaded: LoadedConfig,
  onResult: (r: CheckResult) => void = () => {},
  apiOverride: { address?: string; port?: number } = {},
): Promise<CheckResult[]> {
  const results: CheckResult[] = [];
  const add = (r: CheckResult) => {
    results.push(r);
    onResult(r);
  };
  const { config } = loaded;
  const tf = config.driver?.terraform ?? {};
  // The daemon of this config, if it runs, holds the API port: it names itself by this id.
  const self = { id: config.id ?? `cts-${hostname()}`, https: !!config.api?.tls };
  const tfc = config.driver?.terraformCloud;

  // One Consul client for every Consul check: the probes and the task reads.
  let consul: ConsulClient | undefined;
  let tokenSource: ConsulTokenSource | undefined;
  try {
    tokenSource = consulTokenFromVault(config, { watch: false, log: createLogger({ level: "error" }).child("vault") });
    consul = consulClientFor(config, tokenSource ? { tokenSource } : {});
  } catch (err) {
    add(fail("consul", messageOf(err), "fix the consul settings in the config"));
  }
  // A token from Vault is read first: without it no Consul check can say anything true.
  if (consul && tokenSource) {
    try {
      await tokenSource.current();
      add(pass("consul-token", `read from ${tokenSource.origin}`));
    } catch (err) {
      add(fail("consul-token", messageOf(err), err instanceof CtsError ? ERROR_CATALOGUE[err.code].fix : "check the vault settings and the secret consul.token names"));
      for (const name of ["consul", ...config.tasks.map((t) => `reads:${t.name}`)]) add(fail(name, "not checked: the Consul token could not be read from Vault", "fix the consul-token check first"));
      consul.close();
      consul = undefined;
    }
  }
  if (consul) {
    const http = createConsulProbe(consul);
    try {
      const reachable = await checkConsulReachable(http);
      add(reachable);
      const backend = tf.backend ?? DEFAULT_BACKEND;
      // With Terraform Cloud the state is kept in the workspaces: no Consul backend to check.
      const consulBackend = tfc ? undefined : (backend.consul as { path?: string } | undefined);
      if (!reachable.ok) {
        for (const name of [...config.tasks.map((t) => `reads:${t.name}`), ...(consulBackend ? ["state", "session"] : [])])
          add(fail(name, "not checked: Consul is not reachable", "fix the consul check first"));
      } else {
        const reader = createCatalogReader(consul);
        // A filter Consul refuses is reported as the task's configuration error, where it is written.
        const files = loaded.ctsFiles ?? [loaded.file];
        for (const task of config.tasks)
          add(await checkTaskReads(task, (source, onSkipped) => reader.read(source, undefined, onSkipped).catch((err: unknown) => Promise.reject(taskFilterError(task.name, source, err, files)))));
        if (consulBackend) {
          // The backend's own access_token, when it has one, is the token Terraform keeps state with.
          const stateToken = backendSecretEnv({ consul: consulBackend }).CONSUL_HTTP_TOKEN;
          const state = stateToken ? createConsulProbe(consul, { stateToken }) : http;
          const whose = (r: CheckResult) => (stateToken && !r.ok && r.fix ? { ...r, fix: r.fix.replace("grant the token", "grant the backend's access_token") } : r);
          add(whose(await checkStateWrite(state, consulBackend.path ?? "consul-terraform-sync/terraform")));
          add(whose(await checkSession(state)));
        } else add(pass("state", tfc ? "kept in the Terraform Cloud workspaces, not in Consul" : `kept by the '${Object.keys(backend)[0]}' backend, not in Consul`));
      }
    } finally {
      consul.close();
    }
  }

  for (const r of await vaultChecks(loaded)) add(r);

  if (tfc) {
    const checks = await checkTerraformCloud({ driver: tfc, dir: loaded.dir, workspaces: config.tasks.map((t) => ({ task: t.name, workspace: t.terraformCloudWorkspace })) });
    checks.forEach(add);
    for (const name of ["working-dir", "terraform", "providers"]) add(pass(name, `skipped: driver "terraform-cloud" runs Terraform in Terraform Cloud, not on this machine`));
    add(await checkApiPort(apiOverride.address ?? config.api?.address ?? "127.0.0.1", apiOverride.port ?? config.api?.port ?? 8558, self));
    return results;
  }

  const root = workingRoot(loaded.dir, tf.workingDir);
  const dirCheck = await checkWorkingDir(root);
  add(dirCheck);
  for (const r of checkTaskFolders(taskDirs(loaded, root))) add(r);

  const pluginCacheDir = tf.pluginCacheDir ?? join(root, ".plugin-cache");
  const cacheUsable = dirCheck.ok && (await mkdir(pluginCacheDir, { recursive: true }).then(() => true, () => false));
  // Terraform is started as the driver starts it: its environment, process groups, reaper.
  const runner = createCommandRunner(
    {
      binary: tf.binary ?? "",
      workingDir: root,
      ...(consul ? { env: consul.terraformEnv } : {}),
      backendEnv: backendSecretEnv(tf.backend),
      ...(tf.cliConfigFile ? { cliConfigFile: tf.cliConfigFile } : {}),
      ...(cacheUsable ? { pluginCacheDir } : {}),
    },
    () => {},
  );
  try {
    const binary = await checkTerraformBinary(tf.binary, runner);
    add(binary.result);
    if (binary.path) {
      const { providers, notes } = requiredProviders(loaded);
      const r = await checkProviders(runner, binary.path, providers, { scratchRoot: dirCheck.ok ? root : tmpdir() });
      add(notes.length && r.ok ? { ...r, detail: `${r.detail} (${notes.join("; ")})` } : r);
      const identity = await binaryIdentity(runner, binary.path).catch(() => undefined);
      if (identity) add(checkWorkingDirBinaries(taskDirs(loaded, root), identityText(identity), tf.binary ?? binary.path));
    } else add(fail("providers", "not checked: no Terraform binary", "fix the terraform check first"));
  } finally {
    runner.close();
  }

  add(await checkApiPort(apiOverride.address ?? config.api?.address ?? "127.0.0.1", apiOverride.port ?? config.api?.port ?? 8558, self));
  return results;
}

/** The Vault checks: the secret paths every task's templates read, and the Vault the config names. */
export async function vaultChecks(loaded: LoadedConfig): Promise<CheckResult[]> {
  const paths = new Map<string, string[]>();
  for (const task of loaded.config.tasks)
    for (const dep of taskTemplateDependencies(task).values()) if ("secret" in dep) paths.set(dep.secret, [...(paths.get(dep.secret) ?? []), task.name]);
  let use;
  try {
    use = vaultUseFor(loaded.config);
  } catch (err) {
    return [fail("vault", messageOf(err), "fix the vault settings in the config")];
  }
  return checkVault({ use, paths });
}

/** The working dir of each task of the config (tasks whose name cannot make one are left out). */
function taskDirs(loaded: LoadedConfig, root: string): Array<{ task: string; dir: string }> {
  const dirs: Array<{ task: string; dir: string }> = [];
  for (const t of loaded.config.tasks) {
    try {
      dirs.push({ task: t.name, dir: taskWorkingDir(root, loaded.dir, t) });
    } catch {
      /* a bad name is the config check's to report */
    }
  }
  return dirs;
}

/** The providers every task requires, from a synthesis with empty Consul data. */
export function requiredProviders(loaded: LoadedConfig): { providers: Record<string, unknown>; notes: string[] } {
  const providers: Record<string, unknown> = {};
  const notes: string[] = [];
  for (const task of loaded.config.tasks) {
    const input: AnyTaskInput = {};
    for (const s of allSources(task)) (input as Record<string, unknown>)[fieldOf(s)] = s.kind === "services" ? [] : {};
    try {
      const json = JSON.parse(
        synthesizeTask(task, input, {
          configDir: loaded.dir,
          ...(loaded.config.driver?.terraform?.providerVersions ? { providerVersions: loaded.config.driver.terraform.providerVersions } : {}),
        }).json,
      ) as { terraform?: { required_providers?: Record<string, unknown> } };
      Object.assign(providers, json.terraform?.required_providers ?? {});
    } catch (err) {
      // The message is cut short; the place in the task's code is what the user needs, so it stays.
      const { at } = userCodeFields(err as { detail?: Record<string, unknown> });
      notes.push(`task '${task.name}' was not synthesized with empty data: ${messageOf(err).slice(0, 120)}${at ? ` (at ${at})` : ""}`);
    }
  }
  return { providers, notes };
}
