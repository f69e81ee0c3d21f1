import { createHash, randomBytes } from "node:crypto";
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startManaged, waitUntil } from "../../scripts/demo/processes.ts";
import { nginxBuildInfo } from "../../scripts/demo/nginx-install.ts";
import { nginxForTests } from "./nginx.ts";
import { freePort } from "./ports.ts";

/** nginx with HTTP basic auth in front of a Consul agent, on 127.0.0.1. */
export interface AuthProxy {
  /** http://127.0.0.1:<port> */
  url: string;
  /** nginx's access log: one line per request with the user name it authenticated ("-" for none). */
  accessLog(): Promise<string>;
  stop(): Promise<void>;
}

/**
 * Starts nginx (installed from Debian's packages when missing, see test/support/nginx.ts) with
 * `auth_basic` and one user in an htpasswd file ({SSHA}, made with node's crypto), proxying
 * everything to `upstream` (`host:port` of Consul's HTTP API). Timeouts are long enough for
 * Consul's blocking queries (5 min by default).
 */
export async function startAuthProxy(upstream: string, user: string, password: string): Promise<AuthProxy> {
  const binary = nginxForTests();
  const prefix = await mkdtemp(join(tmpdir(), "cts-auth-proxy-"));
  // Workers may run as another user than the master (root): they must read the htpasswd file.
  await chmod(prefix, 0o755);
  await mkdir(join(prefix, "tmp"), { recursive: true });
  const salt = randomBytes(8);
  const digest = createHash("sha1").update(password).update(salt).digest();
  await writeFile(join(prefix, "htpasswd"), `${user}:{SSHA}${Buffer.concat([digest, salt]).toString("base64")}\n`, { mode: 0o644 });
  const build = nginxBuildInfo(binary);
  const has = (module: string) => !build.includes(`--without-http_${module}_module`);
  const port = await freePort();
  const temp = ["client_body", "proxy", ...["fastcgi", "uwsgi", "scgi"].filter(has)].map((m) => `    ${m}_temp_path ${prefix}/tmp/${m};`).join("\n");
  await writeFile(
    join(prefix, "nginx.conf"),
    `worker_processes 1;
daemon off;
pid ${prefix}/nginx.pid;
error_log ${prefix}/error.log warn;
events { worker_connections 256; }
http {
    log_format withuser '$remote_user $status $request_method $uri';
    access_log ${prefix}/access.log withuser;
${temp}
    upstream consul {
        server ${upstream};
        keepalive 8;
    }
    server {
        listen 127.0.0.1:${port};
        auth_basic "consul";
        auth_basic_user_file ${prefix}/htpasswd;
        location / {
            proxy_pass http://consul;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Authorization "";
            proxy_buffering off;
            proxy_read_timeout 15m;
        }
    }
}
`,
  );
  const proc = startManaged("nginx", binary, ["-p", prefix, "-c", join(prefix, "nginx.conf"), "-e", join(prefix, "error.log")]);
  const url = `http://127.0.0.1:${port}`;
  try {
    // Up once it answers at all (401 without credentials).
    await waitUntil(
      `nginx to listen on ${url}`,
      async () => {
        if (proc.child.exitCode !== null) throw new Error(`nginx exited with ${proc.child.exitCode}: ${proc.output()}`);
        return (await fetch(`${url}/v1/status/leader`, { signal: AbortSignal.timeout(1_000) })).status === 401;
      },
      15_000,
    );
  } catch (e) {
    await proc.stop();
    await rm(prefix, { recursive: true, force: true });
    throw e;
  }
  return {
    url,
    accessLog: () => readFile(join(prefix, "access.log"), "utf8").catch(() => ""),
    async stop() {
      await proc.stop("SIGQUIT", 5_000);
      await rm(prefix, { recursive: true, force: true });
    },
  };
}
