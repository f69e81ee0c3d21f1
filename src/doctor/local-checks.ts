import { randomBytes } from "node:crypto";
import { mkdir, rm } from "node:fs/promises";
import { createServer } from "node:net";
import { join } from "node:path";
import { folderFix, removeKept, writeKept } from "../driver/safe-files.ts";
import { CtsError, messageOf } from "../errors/cts-error.ts";
import type { TerraformProbe } from "../terraform/probe.ts";
import { terraformVersion } from "../terraform/version.ts";
import { readInitRecordSync } from "../terraform/working-dir.ts";
import { fail, pass, type CheckResult } from "./check.ts";
import { DEFAULT_BINARIES, findExecutable } from "../terraform/executable.ts";
import { identifyListener } from "./api-listener.ts";

const INSTALL = "install OpenTofu (https://opentofu.org/docs/intro/install/) or Terraform and put it on PATH";

/**
 * The Terraform binary the config names (or tofu, then terraform, on PATH of the driver's
 * environment) runs and prints its version, started by the driver's runner.
 */
export async function checkTerraformBinary(configured: string | undefined, runner: TerraformProbe): Promise<{ result: CheckResult; path?: string }> {
  const names = configured ? [configured] : DEFAULT_BINARIES;
  const env = runner.env();
  for (const name of names) {
    const path = await findExecutable(name, env);
    if (!path) continue;
    try {
      const version = await terraformVersion(runner, path);
      return { result: pass("terraform", `${path} (version ${version})`), path };
    } catch (err) {
      return { result: fail("terraform", `${path} does not run: ${messageOf(err)}`, `reinstall it, or ${configured ? "fix driver.terraform.binary" : INSTALL}`) };
    }
  }
  const fix = configured ? `fix driver.terraform.binary in the config (a command on PATH or a path), or ${INSTALL}` : `${INSTALL}, or set driver.terraform.binary to its path`;
  return { result: fail("terraform", `${names.map((n) => `'${n}'`).join(" and ")} not found${configured?.includes("/") ? "" : " on PATH"}`, fix) };
}

/**
 * Terraform can install the providers the tasks use: `init -backend=false` in a scratch dir with
 * only their `required_providers`, run by the driver's runner (the same environment, CLI config and
 * plugin cache as real runs; its own process group, known to the reaper).
 */
export async function checkProviders(
  runner: TerraformProbe,
  binary: string,
  providers: Record<string, unknown>,
  opts: { scratchRoot: string; timeoutMs?: number },
): Promise<CheckResult> {
  const names = Object.keys(providers);
  if (names.length === 0) return pass("providers", "the tasks use no providers");
  const dir = join(opts.scratchRoot, `.cts-doctor-${randomBytes(4).toString("hex")}`);
  try {
    writeKept(dir, "main.tf.json", JSON.stringify({ terraform: { required_providers: providers } }));
    const timeoutMs = opts.timeoutMs ?? 300_000;
    const res = await runner.probe(binary, ["init", "-backend=false", "-input=false", "-no-color"], { cwd: dir, timeoutMs });
    const cliConfig = runner.env().TF_CLI_CONFIG_FILE;
    if (res.exitCode === 0) return pass("providers", `${names.join(", ")} can be installed${cliConfig ? ` (CLI config ${cliConfig})` : ""}`);
    const ended = res.spawnError ? messageOf(res.spawnError) : res.timedOut ? `did not finish within ${Math.round(timeoutMs / 1000)} s` : `exit ${res.exitCode}`;
    const error = /Error:[\s\S]*/.exec(res.stderr || res.stdout)?.[0].replace(/\s+/g, " ").slice(0, 400) ?? ended;
    return fail(
      "providers",
      `${binary} init could not install ${names.join(", ")}: ${error}`,
      "let Terraform reach its registry (registry.opentofu.org / registry.terraform.io, proxies via HTTPS_PROXY), or point driver.terraform.cliConfigFile (TF_CLI_CONFIG_FILE) at a CLI config with a provider_installation mirror that holds them",
    );
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** The working dir can be created and written (as cts writes there: no link followed). */
export async function checkWorkingDir(root: string): Promise<CheckResult> {
  const probe = `.cts-doctor-${randomBytes(4).toString("hex")}`;
  try {
    await mkdir(root, { recursive: true });
    writeKept(root, probe, "cts doctor probe");
    removeKept(root, probe);
    return pass("working-dir", `${root} is writable`);
  } catch (err) {
    const cause = err instanceof CtsError && err.cause instanceof Error ? err.cause : err;
    const code = (cause as NodeJS.ErrnoException).code;
    const byCause = code && code !== "ENOENT" ? `; ${folderFix(code, root)}` : ", or fix its owner/permissions";
    return fail("working-dir", `cannot write in ${root}: ${messageOf(cause)}`, `set driver.terraform.workingDir to a directory this user may write${byCause}`);
  }
}

/**
 * Nothing listens on the API's address and port yet, or the cts daemon of this config does
 * (`self`: its instance id and whether its API serves HTTPS): a running daemon holds its own port.
 */
export async function checkApiPort(address: string, port: number, self?: { id: string; https: boolean }): Promise<CheckResult> {
  if (port === 0) return pass("api-port", `${address}:0 picks a free port at start`);
  const server = createServer();
  try {
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen({ host: address, port, exclusive: true }, resolve);
    });
    return pass("api-port", `${address}:${port} is free`);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "EADDRINUSE" && self) {
      const who = await identifyListener(address, port, self.https);
      if (who.kind === "cts" && who.id === self.id) return pass("api-port", `${address}:${port} is held by this config's cts daemon (id '${self.id}'), which is running`);
      if (who.kind === "cts")
        return fail("api-port", `${address}:${port} is held by another cts daemon (${who.id ? `id '${who.id}'` : "an older cts that does not name itself"}), not by this config's (id '${self.id}')`, "stop that daemon, or give this config another api.port (0 = any free port) / api.address, or pass --api-port to cts watch");
    }
    const why = code === "EADDRINUSE" ? "is in use (a cts already running?)" : code === "EADDRNOTAVAIL" ? "is not an address of this host" : messageOf(err);
    return fail("api-port", `${address}:${port} ${why}`, "stop what listens there, or set api.port (0 = any free port) / api.address in the config, or pass --api-port to cts watch");
  } finally {
    await new Promise<void>((resolve) => (server.listening ? server.close(() => resolve()) : resolve()));
  }
}

/**
 * Every task's working dir was initialized by the binary the config runs (kind and version, from
 * the dir's init record): a dir made by another binary is named with what made it and the fix.
 */
export function checkWorkingDirBinaries(dirs: Array<{ task: string; dir: string }>, binary: string, binaryName: string): CheckResult {
  const other: string[] = [];
  let fromTofu = false;
  const unrecorded: string[] = [];
  let same = 0;
  for (const { task, dir } of dirs) {
    let record;
    try {
      record = readInitRecordSync(dir, task);
    } catch {
      continue; // a link or an unreadable folder: the task-dir check names it
    }
    if (!record) continue;
    if (!record.binary) unrecorded.push(task);
    else if (record.binary !== binary) {
      fromTofu ||= record.binary.startsWith("tofu ") && binary.startsWith("terraform ");
      other.push(`${dir} (task '${task}': initialized by ${record.binary})`);
    } else same++;
  }
  if (other.length)
    return fail(
      "working-dirs",
      `${other.length} working ${other.length === 1 ? "dir was" : "dirs were"} initialized by another binary than ${binary}: ${other.join("; ")}`,
      `nothing by hand is needed: the next run of each task re-initializes its dir for ${binary} (one init, logged). To do it now, run '${binaryName} init -upgrade -input=false' in each dir named; to keep the old binary, set driver.terraform.binary back to it${fromTofu ? ". A dir OpenTofu made also has state naming providers at registry.opentofu.org: its first Terraform run fails and names the `terraform state replace-provider` command to run once" : ""}`,
    );
  const notes = unrecorded.length ? `; ${unrecorded.length} without a recorded binary (made by an older cts), re-initialized once on their next run` : "";
  return pass("working-dirs", `${same} initialized working ${same === 1 ? "dir" : "dirs"}, all by ${binary}${notes}`);
}
