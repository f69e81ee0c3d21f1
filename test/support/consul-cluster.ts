import { spawn, type ChildProcess } from "node:child_process";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "./ports.ts";
import { tools } from "./tools.ts";

/** One server of a ConsulCluster. */
export interface ClusterServer {
  /** Node name (srv-0 …). */
  name: string;
  /** host:port of its HTTP API. */
  address: string;
  /** http://host:port */
  url: string;
  /** Its Raft address (host:server port), as /v1/status/leader names it. */
  raft: string;
  running(): boolean;
  /** Stops the process (SIGKILL: a crash, no leave); its data dir stays. */
  halt(): Promise<void>;
  /** Starts it again with the same data dir and ports (it rejoins the others). */
  resume(): void;
}

/** Three real Consul servers (-server, bootstrap_expect 3) on 127.0.0.1, each with its own data dir. */
export interface ConsulCluster {
  servers: ClusterServer[];
  /** Raw HTTP call to one server (JSON in, JSON out); throws on a status >= 300. */
  api(server: ClusterServer, method: string, path: string, body?: unknown): Promise<any>;
  /** The server the running servers agree leads (undefined: none answers with one). */
  leader(): Promise<ClusterServer | undefined>;
  /**
   * Waits until `via` names a leader, counts 3 Raft peers and answers a read that needs the leader
   * (right after the leader is killed, a follower still names it for a second or two).
   */
  waitForLeader(via: ClusterServer, timeoutMs?: number): Promise<ClusterServer>;
  /** Everything the servers printed (for failure messages). */
  logs(): string;
  /** Stops every server and removes the data dirs. */
  stop(): Promise<void>;
}

/**
 * Starts three servers that find each other with retry_join and elect a leader. Raft runs with
 * `raft_multiplier = 1` (HashiCorp's production advice; the default 5 is for small dev machines),
 * so an election takes about a second; RPCs wait up to `rpc_hold_timeout` (7 s, Consul's default)
 * for a leader before a server answers 500 "No cluster leader". Always `stop()` in `after`.
 */
export async function startConsulCluster(): Promise<ConsulCluster> {
  const { consul } = tools();
  const dir = await mkdtemp(join(tmpdir(), "cts-consul-cluster-"));
  let output = "";
  const ports = [];
  for (let i = 0; i < 3; i++) {
    const [http, serfLan, serfWan, server] = await Promise.all([freePort(), freePort(), freePort(), freePort()]);
    ports.push({ http, serfLan, serfWan, server });
  }
  const servers: ClusterServer[] = [];
  const children: (ChildProcess | undefined)[] = [];
  for (let i = 0; i < 3; i++) {
    const p = ports[i]!;
    const data = join(dir, `data-${i}`);
    await mkdir(data);
    const cfg = join(dir, `srv-${i}.hcl`);
    const joins = ports.filter((_, j) => j !== i).map((o) => `127.0.0.1:${o.serfLan}`);
    await writeFile(
      cfg,
      `node_name = "srv-${i}"
datacenter = "dc1"
data_dir = ${JSON.stringify(data)}
server = true
bootstrap_expect = 3
bind_addr = "127.0.0.1"
client_addr = "127.0.0.1"
retry_join = ${JSON.stringify(joins)}
retry_interval = "1s"
log_level = "warn"
performance { raft_multiplier = 1 }
ports {
  http = ${p.http}
  https = -1
  dns = -1
  grpc = -1
  grpc_tls = -1
  serf_lan = ${p.serfLan}
  serf_wan = ${p.serfWan}
  server = ${p.server}
}
`,
    );
    const start = () => {
      const child = spawn(consul, ["agent", "-config-file", cfg], { stdio: ["ignore", "pipe", "pipe"] });
      child.stdout!.on("data", (d) => (output += `[srv-${i}] ${d}`));
      child.stderr!.on("data", (d) => (output += `[srv-${i}] ${d}`));
      children[i] = child;
    };
    servers.push({
      name: `srv-${i}`,
      address: `127.0.0.1:${p.http}`,
      url: `http://127.0.0.1:${p.http}`,
      raft: `127.0.0.1:${p.server}`,
      running: () => {
        const c = children[i];
        return c !== undefined && c.exitCode === null && c.signalCode === null;
      },
      halt: async () => {
        const c = children[i];
        if (!c || c.exitCode !== null || c.signalCode !== null) return;
        const exited = new Promise((r) => c.once("exit", r));
        c.kill("SIGKILL");
        await exited;
      },
      resume: start,
    });
    start();
  }

  const api = async (server: ClusterServer, method: string, path: string, body?: unknown) => {
    const res = await fetch(`${server.url}${path}`, { method, ...(body === undefined ? {} : { body: JSON.stringify(body) }), signal: AbortSignal.timeout(15_000) });
    const text = await res.text();
    if (!res.ok) throw new Error(`consul ${server.name} ${method} ${path}: ${res.status} ${text}`);
    return text ? JSON.parse(text) : undefined;
  };
  const leaderVia = async (s: ClusterServer): Promise<ClusterServer | undefined> => {
    const raft = (await api(s, "GET", "/v1/status/leader").catch(() => "")) as string;
    return servers.find((o) => o.raft === raft);
  };
  const cluster: ConsulCluster = {
    servers,
    api,
    async leader() {
      for (const s of servers) {
        if (!s.running()) continue;
        const l = await leaderVia(s);
        if (l) return l;
      }
      return undefined;
    },
    async waitForLeader(via, timeoutMs = 60_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const l = await leaderVia(via);
        if (l) {
          const peers = (await api(via, "GET", "/v1/status/peers").catch(() => [])) as string[];
          const read = peers.length === 3 && (await api(via, "GET", "/v1/catalog/nodes").then(() => true, () => false));
          if (read) return l;
        }
        if (Date.now() > deadline) throw new Error(`no leader seen by ${via.name} within ${timeoutMs} ms:\n${output.slice(-4000)}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    },
    logs: () => output,
    async stop() {
      await Promise.all(servers.map((s) => s.halt()));
      await rm(dir, { recursive: true, force: true });
    },
  };
  try {
    await cluster.waitForLeader(servers[0]!);
  } catch (err) {
    await cluster.stop();
    throw err;
  }
  return cluster;
}
