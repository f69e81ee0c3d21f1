import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { render } from "cdktf-sync";
import type { DemoEnvironment } from "../../examples/demo-environment.ts";
import { upstreamConfig } from "../../examples/load-balancer/upstream.ts";
import { nginxBuildInfo } from "./nginx-install.ts";
import { freePort } from "./ports.ts";
import { startManaged, waitUntil, type Managed } from "./processes.ts";

/** The demo's nginx: a load balancer on 127.0.0.1 in front of the `web` pool. */
export interface Nginx {
  /** http://127.0.0.1:<port> */
  url: string;
  port: number;
  process: Managed;
  stop(): Promise<void>;
}

/** Where nginx is and what it serves. */
export interface NginxSettings {
  binary: string;
  env: Pick<DemoEnvironment, "nginxPrefix" | "nginxConf" | "nginxErrorLog">;
  /** The file the cts task keeps (nginx.conf includes it). */
  upstreamFile: string;
  upstream: string;
}

/**
 * Writes nginx.conf and an empty pool (nginx refuses to start on a missing include), then runs
 * nginx in the foreground (`daemon off`) so it is our child and stops with the demo. Temp paths
 * of every compiled-in module are pointed into the prefix: Debian's defaults are in /var/lib.
 */
export async function startNginx(settings: NginxSettings): Promise<Nginx> {
  const { binary, env, upstreamFile, upstream } = settings;
  const port = await freePort();
  const build = nginxBuildInfo(binary);
  const has = (module: string) => !build.includes(`--without-http_${module}_module`);
  await mkdir(join(env.nginxPrefix, "tmp"), { recursive: true });
  await mkdir(join(upstreamFile, ".."), { recursive: true, mode: 0o750 });
  await writeFile(
    env.nginxConf,
    render({ file: "nginx/nginx.conf.hbs" }, { prefix: env.nginxPrefix, port, upstream, upstreamFile, fastcgi: has("fastcgi"), uwsgi: has("uwsgi"), scgi: has("scgi") }),
  );
  await writeFile(upstreamFile, upstreamConfig([], { task: "(not run yet)", service: upstream, upstream }).content, { mode: 0o640 });
  const proc = startManaged("nginx", binary, ["-p", env.nginxPrefix, "-c", env.nginxConf, "-e", env.nginxErrorLog]);
  const url = `http://127.0.0.1:${port}`;
  try {
    await waitUntil(
      `nginx to listen on ${url}`,
      async () => {
        if (proc.child.exitCode !== null) throw new Error(`nginx exited with ${proc.child.exitCode}: ${proc.output()}`);
        await fetch(url, { signal: AbortSignal.timeout(1_000) });
        return true;
      },
      15_000,
    );
  } catch (e) {
    await proc.stop();
    throw e;
  }
  return {
    url,
    port,
    process: proc,
    // SIGQUIT: graceful (workers finish their requests); the process group gets SIGKILL after 5 s.
    stop: () => proc.stop("SIGQUIT", 5_000),
  };
}
