import { existsSync } from "node:fs";
import { join } from "node:path";
import type { ApiConfig } from "../config/types.ts";
import { DEFAULT_HTTP_ADDR, resolveHttpAddr } from "./api-client.ts";

/** The config file to read the API's address from: `--config`, else a default config file in `cwd`, else none. */
async function configFileFor(flag: string | undefined, cwd: string): Promise<string | undefined> {
  if (flag !== undefined) return flag;
  const { DEFAULT_CONFIG_FILES } = await import("../config/load.ts");
  return DEFAULT_CONFIG_FILES.map((name) => join(cwd, name)).find((file) => existsSync(file));
}

/**
 * Where a client reaches the API a config describes: `api.address` (all interfaces → loopback),
 * `api.port`, https with `api.tls`. Undefined for `api.port = 0` (a free port, known only to the daemon).
 */
export function configApiAddress(api: ApiConfig | undefined): string | undefined {
  const port = api?.port ?? 8558;
  if (port === 0) return undefined;
  let host = api?.address?.trim() || "127.0.0.1";
  if (host === "0.0.0.0") host = "127.0.0.1";
  else if (host === "::" || host === "[::]") host = "[::1]";
  else if (host.includes(":") && !host.startsWith("[")) host = `[${host}]`;
  return `${api?.tls ? "https" : "http"}://${host}:${port}`;
}

/**
 * The address of the daemon an API command talks to, the same for every one (`cts status`, `task`,
 * `drift`, `approve`, `reject`): `--http-addr`, then `CTS_ADDRESS`, then the `api` settings of the
 * config (`--config`, or cts.config.ts in the current directory), then http://127.0.0.1:8558.
 */
export async function daemonAddress(
  flags: { httpAddr?: string; config?: string },
  env: Record<string, string | undefined> = process.env,
  cwd = process.cwd(),
): Promise<string> {
  if (flags.httpAddr !== undefined || env.CTS_ADDRESS?.trim()) return resolveHttpAddr(flags.httpAddr, env);
  const file = await configFileFor(flags.config, cwd);
  if (!file) return DEFAULT_HTTP_ADDR;
  const { loadConfig } = await import("../config/load.ts");
  const loaded = await loadConfig(file, cwd);
  return resolveHttpAddr(configApiAddress(loaded.config.api) ?? DEFAULT_HTTP_ADDR, {});
}
