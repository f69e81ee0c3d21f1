import { tmpdir } from "node:os";
import { isAbsolute, join, resolve } from "node:path";

/**
 * Where the demo keeps everything on this machine. `npm run demo` creates a temp dir and passes
 * it (with the tool paths) to the daemon through the environment, so `examples/cts.config.ts` is
 * one checked-in file that the demo, its test and a user running `cts watch` by hand all load.
 */
export interface DemoEnvironment {
  /** Root of everything the demo writes (removed when the demo stops). */
  dir: string;
  /** OpenTofu (or Terraform) binary. */
  tofu: string;
  /** Terraform CLI config (the offline provider mirror), if any. */
  cliConfig: string | undefined;
  /** nginx binary the reload runs (absolute: Terraform's environment may lack /usr/sbin on PATH). */
  nginx: string;
  /** Port of the cts HTTP API. */
  apiPort: number;
  /** nginx's prefix dir: its config, pid file, logs and temp files. */
  nginxPrefix: string;
  /** nginx's main config file. */
  nginxConf: string;
  /** nginx's error log (passed with -e so nginx never touches /var/log). */
  nginxErrorLog: string;
  /** The only dir the load-balancer task writes to. */
  upstreamDir: string;
  /** The only dir the firewall task writes to. */
  firewallDir: string;
  /** Root of the per-task Terraform working dirs. */
  workingDir: string;
}

/** Reads the demo's settings: CTS_DEMO_DIR, CTS_TOFU_BIN, CTS_TF_CLI_CONFIG, CTS_NGINX_BIN, CTS_DEMO_API_PORT. */
export function demoEnvironment(env: NodeJS.ProcessEnv = process.env): DemoEnvironment {
  const dir = resolve(env.CTS_DEMO_DIR || join(tmpdir(), "cts-demo"));
  const port = Number(env.CTS_DEMO_API_PORT || 8558);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`CTS_DEMO_API_PORT must be a port number (got '${env.CTS_DEMO_API_PORT}').`);
  const nginx = env.CTS_NGINX_BIN || "/usr/sbin/nginx";
  if (!isAbsolute(nginx)) throw new Error(`CTS_NGINX_BIN must be an absolute path (got '${nginx}').`);
  return {
    dir,
    tofu: env.CTS_TOFU_BIN || "tofu",
    cliConfig: env.CTS_TF_CLI_CONFIG || undefined,
    nginx,
    apiPort: port,
    ...demoPaths(dir),
  };
}

/** The layout under the demo dir, shared by the config (what tasks write) and the driver (what it starts). */
export function demoPaths(dir: string): Pick<DemoEnvironment, "nginxPrefix" | "nginxConf" | "nginxErrorLog" | "upstreamDir" | "firewallDir" | "workingDir"> {
  const nginxPrefix = join(dir, "nginx");
  return {
    nginxPrefix,
    nginxConf: join(nginxPrefix, "nginx.conf"),
    nginxErrorLog: join(nginxPrefix, "error.log"),
    upstreamDir: join(nginxPrefix, "upstreams"),
    firewallDir: join(dir, "firewall"),
    workingDir: join(dir, "sync-tasks"),
  };
}
