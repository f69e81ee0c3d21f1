import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

/** Paths of the real binaries integration tests use. */
export interface Tools {
  tofu: string;
  consul: string;
  /** Terraform 1.5.7 (MPL-2.0), to prove the driver works with both binaries. */
  terraform: string;
  /** CLI config that installs providers only from the offline mirror, with this test process's own plugin cache. */
  cliConfig: string;
  /** The plugin cache of this test process (empty at start). */
  pluginCache: string;
  /** OpenBao's `bao` (a Vault-compatible server and CLI), for the Vault tests. */
  bao: string;
}

let cached: Tools | undefined;

/**
 * The real Consul and OpenTofu, built by scripts/tools.sh when missing. Fails loudly: an
 * integration test never skips itself because a tool is absent.
 */
export function tools(): Tools {
  if (cached) return cached;
  let env: Record<string, string | undefined> = process.env;
  if (!env.CTS_TOFU_BIN || !env.CTS_CONSUL_BIN || !env.CTS_TF_CLI_CONFIG || !env.CTS_TERRAFORM_BIN || !env.CTS_BAO_BIN) {
    const script = fileURLToPath(new URL("../../scripts/tools.sh", import.meta.url));
    const out = execFileSync("bash", [script, "--env"], { encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] });
    env = {};
    for (const m of out.matchAll(/^export (\w+)='(.*)'$/gm)) env[m[1]!] = m[2]!;
  }
  const t = { tofu: env.CTS_TOFU_BIN!, consul: env.CTS_CONSUL_BIN!, terraform: env.CTS_TERRAFORM_BIN!, cliConfig: env.CTS_TF_CLI_CONFIG!, bao: env.CTS_BAO_BIN! };
  for (const [name, path] of Object.entries(t)) {
    if (!path || !existsSync(path)) throw new Error(`test tool '${name}' not found at '${path}'. Run 'bash scripts/tools.sh'.`);
  }
  cached = { ...t, ...ownPluginCache(t.cliConfig) };
  return cached;
}

let otelcolPath: string | undefined;

/**
 * The OpenTelemetry Collector built by scripts/tools.sh (an OTLP receiver and the debug exporter),
 * for the traces test; built when missing. Apart from tools(): only that test needs it.
 */
export function otelcol(): string {
  if (otelcolPath) return otelcolPath;
  let path = process.env.CTS_OTELCOL_BIN;
  if (!path) {
    const script = fileURLToPath(new URL("../../scripts/tools.sh", import.meta.url));
    const out = execFileSync("bash", [script, "--env"], { encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] });
    path = /^export CTS_OTELCOL_BIN='(.*)'$/m.exec(out)?.[1];
  }
  if (!path || !existsSync(path)) throw new Error(`test tool 'otelcol' not found at '${path}'. Run 'bash scripts/tools.sh'.`);
  otelcolPath = path;
  return path;
}

/**
 * A copy of the tools' CLI config whose plugin cache belongs to this test process alone: test
 * files run side by side, and Terraform's plugin cache is not safe for concurrent installs from
 * several processes (one init re-links an entry while another command starts the provider).
 */
function ownPluginCache(sharedConfig: string): { cliConfig: string; pluginCache: string } {
  const dir = mkdtempSync(join(tmpdir(), "cts-test-tf-"));
  const pluginCache = join(dir, "plugin-cache");
  mkdirSync(pluginCache);
  const text = readFileSync(sharedConfig, "utf8").replace(/^\s*plugin_cache_dir\s*=.*$/m, "");
  const cliConfig = join(dir, "tofu.rc");
  writeFileSync(cliConfig, `${text}\nplugin_cache_dir = ${JSON.stringify(pluginCache)}\n`);
  process.once("exit", () => rmSync(dir, { recursive: true, force: true }));
  return { cliConfig, pluginCache };
}
