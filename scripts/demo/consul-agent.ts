import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { freePort } from "./ports.ts";
import { startManaged, waitUntil, type Managed } from "./processes.ts";

/** A Consul dev agent the demo started (127.0.0.1, free ports, its own data dir). */
export interface ConsulAgent {
  /** host:port of the HTTP API. */
  address: string;
  /** http://host:port (the UI is at /ui/). */
  url: string;
  /** JSON call to the agent's HTTP API; throws with Consul's answer on a non-2xx status. */
  api(method: string, path: string, body?: unknown): Promise<any>;
  register(service: Record<string, unknown>): Promise<void>;
  deregister(id: string): Promise<void>;
  /** Ids of the instances of `service` whose checks all pass, sorted. */
  passing(service: string): Promise<string[]>;
  process: Managed;
  stop(): Promise<void>;
}

/** Starts `consul agent -dev` with its data and config under `dir`; waits for a leader and its node. */
export async function startConsulAgent(binary: string, dir: string): Promise<ConsulAgent> {
  await mkdir(dir, { recursive: true });
  const [http, serfLan, serfWan, server, grpc] = await Promise.all([freePort(), freePort(), freePort(), freePort(), freePort()]);
  const cfg = join(dir, "agent.hcl");
  await writeFile(
    cfg,
    `# cts demo: a dev agent that listens on loopback only, on ports nobody else uses.
bind_addr   = "127.0.0.1"
client_addr = "127.0.0.1"
ports {
  http     = ${http}
  dns      = -1
  serf_lan = ${serfLan}
  serf_wan = ${serfWan}
  server   = ${server}
  grpc     = ${grpc}
  grpc_tls = -1
}
`,
  );
  const proc = startManaged("consul", binary, ["agent", "-dev", "-config-file", cfg, "-node", "cts-demo", "-log-level", "warn"], {
    logFile: join(dir, "consul.log"),
  });
  const url = `http://127.0.0.1:${http}`;
  const api = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${url}${path}`, { method, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
    const text = await res.text();
    if (!res.ok) throw new Error(`consul ${method} ${path}: ${res.status} ${text.trim()}`);
    return text ? JSON.parse(text) : undefined;
  };
  try {
    await waitUntil(
      "Consul to elect a leader",
      async () => {
        if (proc.child.exitCode !== null) throw new Error(`consul exited with ${proc.child.exitCode}:\n${proc.output()}`);
        const leader = await api("GET", "/v1/status/leader");
        // The dev node registers itself right after electing; indexes settle once it is there.
        return leader && ((await api("GET", "/v1/catalog/nodes")) as unknown[]).length > 0;
      },
      30_000,
    );
  } catch (e) {
    await proc.stop();
    throw new Error(`${(e as Error).message}\n${proc.output()}`);
  }
  return {
    address: `127.0.0.1:${http}`,
    url,
    api,
    register: (svc) => api("PUT", "/v1/agent/service/register", svc),
    deregister: (id) => api("PUT", `/v1/agent/service/deregister/${encodeURIComponent(id)}`),
    async passing(service) {
      const entries = (await api("GET", `/v1/health/service/${encodeURIComponent(service)}?passing=1`)) as Array<{ Service: { ID: string } }>;
      return entries.map((e) => e.Service.ID).sort();
    },
    process: proc,
    stop: () => proc.stop("SIGTERM", 5_000),
  };
}
