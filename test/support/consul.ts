import { spawn, type ChildProcess } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { tools } from "./tools.ts";
import { freePort } from "./ports.ts";

/** A real `consul agent -dev` on 127.0.0.1 with free ports and its own data dir. */
export interface ConsulAgent {
  /** host:port of the HTTP API. */
  address: string;
  /** http://host:port */
  url: string;
  port: number;
  /** Raw HTTP call to the agent (JSON in, JSON out). */
  api(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<any>;
  /** Registers a service instance through the agent (a dev agent is also the node). */
  register(svc: Record<string, unknown>): Promise<void>;
  deregister(id: string): Promise<void>;
  /** Stops the agent process (data is lost: this is a dev agent). */
  stop(): Promise<void>;
  /** Stops and starts the agent on the same ports: the index resets, as after a real restart. */
  restart(): Promise<void>;
  /** Everything the agent printed (for failure messages). */
  logs(): string;
}

/** Extra agent options for special tests (ACLs, TLS). */
export interface ConsulOptions {
  /** HCL appended to the agent's config file. */
  extraConfig?: string;
  /** Headers every `api` call sends (e.g. an ACL token). */
  headers?: Record<string, string>;
}

/** Starts a dev agent; waits until it has a leader. Always pair with `stop()` (e.g. in `after`). */
export async function startConsul(opts: ConsulOptions = {}): Promise<ConsulAgent> {
  const { consul } = tools();
  const dir = await mkdtemp(join(tmpdir(), "cts-consul-"));
  const [http, serfLan, serfWan, server, grpc] = await Promise.all([freePort(), freePort(), freePort(), freePort(), freePort()]);
  const cfg = join(dir, "agent.hcl");
  await writeFile(
    cfg,
    `bind_addr = "127.0.0.1"
client_addr = "127.0.0.1"
ports {
  http = ${http}
  dns = -1
  serf_lan = ${serfLan}
  serf_wan = ${serfWan}
  server = ${server}
  grpc = ${grpc}
  grpc_tls = -1
}
${opts.extraConfig ?? ""}
`,
  );
  let child: ChildProcess | undefined;
  let output = "";
  const url = `http://127.0.0.1:${http}`;

  const start = async () => {
    child = spawn(consul, ["agent", "-dev", "-config-file", cfg, "-node", "cts-test", "-log-level", "warn"], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    child.stdout!.on("data", (d) => (output += d));
    child.stderr!.on("data", (d) => (output += d));
    const deadline = Date.now() + 30_000;
    for (;;) {
      if (child.exitCode !== null) throw new Error(`consul exited with ${child.exitCode}:\n${output}`);
      try {
        const res = await fetch(`${url}/v1/status/leader`, { headers: opts.headers });
        const leader = res.ok ? await res.json() : "";
        if (leader) {
          // The dev node registers itself right after electing; wait for it so indexes settle.
          const nodes = await fetch(`${url}/v1/catalog/nodes`, { headers: opts.headers });
          if (nodes.ok && ((await nodes.json()) as unknown[]).length > 0) return;
        }
      } catch {
        /* not listening yet */
      }
      if (Date.now() > deadline) throw new Error(`consul did not elect a leader within 30 s:\n${output}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  };
  const stopProcess = async () => {
    const c = child;
    if (!c || c.exitCode !== null || c.signalCode) return;
    const exited = new Promise((r) => c.once("exit", r));
    c.kill("SIGTERM");
    const t = setTimeout(() => c.kill("SIGKILL"), 5_000);
    await exited;
    clearTimeout(t);
  };

  const api = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
    const res = await fetch(`${url}${path}`, {
      method,
      headers: { ...opts.headers, ...headers },
      body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
    });
    const text = await res.text();
    if (!res.ok) throw new Error(`consul ${method} ${path}: ${res.status} ${text}`);
    try {
      return text ? JSON.parse(text) : undefined;
    } catch {
      return text;
    }
  };

  await start();
  return {
    address: `127.0.0.1:${http}`,
    url,
    port: http,
    api,
    register: (svc) => api("PUT", "/v1/agent/service/register", svc),
    deregister: (id) => api("PUT", `/v1/agent/service/deregister/${encodeURIComponent(id)}`),
    stop: async () => {
      await stopProcess();
      await rm(dir, { recursive: true, force: true });
    },
    restart: async () => {
      await stopProcess();
      await start();
    },
    logs: () => output,
  };
}
