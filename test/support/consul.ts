import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import { request as httpsRequest } from "node:https";
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
  /** Stops the agent process only (an outage): same ports and config for `resume`. */
  halt(): Promise<void>;
  /** Starts a halted agent again on the same ports (a dev agent: its catalog starts empty); waits for its leader. */
  resume(): Promise<void>;
  /** Everything the agent printed (for failure messages). */
  logs(): string;
  /** Port of the Serf WAN pool (for another datacenter's `retryJoinWan`). */
  serfWanPort: number;
  /** With `tls`: the CA and a client certificate signed by it (files in the agent's temp dir). */
  tls?: { caFile: string; certFile: string; keyFile: string };
}

/** Extra agent options for special tests (ACLs, TLS). */
export interface ConsulOptions {
  /** HCL appended to the agent's config file. */
  extraConfig?: string;
  /** Headers every `api` call sends (e.g. an ACL token). */
  headers?: Record<string, string>;
  /** Serve HTTPS only (certificates made with `consul tls`); `verifyIncoming` demands client certificates. */
  tls?: { verifyIncoming?: boolean };
  /** Datacenter of this server (default dc1). */
  datacenter?: string;
  /** Node name (default cts-test). */
  node?: string;
  /** Serf WAN addresses (`127.0.0.1:<port>`) of servers in other datacenters to federate with. */
  retryJoinWan?: string[];
  /** Open the gRPC TLS port (cluster peering dials it) and enable peering. */
  peering?: boolean;
}

/** Makes a CA, a server certificate (SANs include 127.0.0.1) and a client certificate. */
function makeCertificates(consul: string, dir: string) {
  const run = (args: string[]) => execFileSync(consul, args, { cwd: dir, stdio: "pipe" });
  run(["tls", "ca", "create"]);
  run(["tls", "cert", "create", "-server", "-dc", "dc1", "-additional-ipaddress", "127.0.0.1"]);
  run(["tls", "cert", "create", "-client", "-dc", "dc1"]);
  return {
    caFile: join(dir, "consul-agent-ca.pem"),
    serverCert: join(dir, "dc1-server-consul-0.pem"),
    serverKey: join(dir, "dc1-server-consul-0-key.pem"),
    certFile: join(dir, "dc1-client-consul-0.pem"),
    keyFile: join(dir, "dc1-client-consul-0-key.pem"),
  };
}

/** fetch() for http, node:https with the CA and client certificate for https. */
async function call(url: string, init: { method?: string; headers?: Record<string, string>; body?: string }, tls?: { caFile: string; certFile: string; keyFile: string }) {
  if (!tls) {
    const res = await fetch(url, init);
    return { ok: res.ok, status: res.status, text: await res.text() };
  }
  return new Promise<{ ok: boolean; status: number; text: string }>((resolve, reject) => {
    const req = httpsRequest(
      url,
      { method: init.method ?? "GET", headers: init.headers, ca: readFileSync(tls.caFile), cert: readFileSync(tls.certFile), key: readFileSync(tls.keyFile) },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (d) => (text += d));
        res.on("end", () => resolve({ ok: (res.statusCode ?? 500) < 300, status: res.statusCode ?? 500, text }));
      },
    );
    req.on("error", reject);
    req.end(init.body);
  });
}

/**
 * Starts a dev agent; waits until it has a leader. Always pair with `stop()` (e.g. in `after`).
 * A free port can be taken by another test process between picking it and the agent binding it:
 * then the agent is started again on new ports (at most three times).
 */
export async function startConsul(opts: ConsulOptions = {}): Promise<ConsulAgent> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startConsulOnce(opts);
    } catch (err) {
      if (attempt >= 3 || !/address already in use/.test(String((err as Error)?.message))) throw err;
    }
  }
}

async function startConsulOnce(opts: ConsulOptions): Promise<ConsulAgent> {
  const { consul } = tools();
  const dir = await mkdtemp(join(tmpdir(), "cts-consul-"));
  const [http, serfLan, serfWan, server, grpc, grpcTls] = await Promise.all([freePort(), freePort(), freePort(), freePort(), freePort(), opts.peering ? freePort() : Promise.resolve(-1)]);
  const cfg = join(dir, "agent.hcl");
  const certs = opts.tls ? makeCertificates(consul, dir) : undefined;
  const clientTls = certs ? { caFile: certs.caFile, certFile: certs.certFile, keyFile: certs.keyFile } : undefined;
  const tlsBlock = certs
    ? `tls {
  defaults {
    ca_file = "${certs.caFile}"
    cert_file = "${certs.serverCert}"
    key_file = "${certs.serverKey}"
    verify_incoming = ${opts.tls?.verifyIncoming ? "true" : "false"}
    verify_outgoing = true
  }
}
`
    : "";
  await writeFile(
    cfg,
    `bind_addr = "127.0.0.1"
client_addr = "127.0.0.1"
${tlsBlock}ports {
  ${certs ? `http = -1
  https = ${http}` : `http = ${http}`}
  dns = -1
  serf_lan = ${serfLan}
  serf_wan = ${serfWan}
  server = ${server}
  grpc = ${grpc}
  grpc_tls = ${grpcTls}
}
${opts.peering ? "peering {\n  enabled = true\n}\n" : ""}${opts.datacenter ? `datacenter = "${opts.datacenter}"\n` : ""}${opts.retryJoinWan ? `retry_join_wan = ${JSON.stringify(opts.retryJoinWan)}\nretry_interval_wan = "1s"\n` : ""}${opts.extraConfig ?? ""}
`,
  );
  let child: ChildProcess | undefined;
  let output = "";
  const url = `${certs ? "https" : "http"}://127.0.0.1:${http}`;

  const start = async () => {
    child = spawn(consul, ["agent", "-dev", "-config-file", cfg, "-node", opts.node ?? "cts-test", "-log-level", "warn"], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    child.stdout!.on("data", (d) => (output += d));
    child.stderr!.on("data", (d) => (output += d));
    const deadline = Date.now() + 30_000;
    for (;;) {
      if (child.exitCode !== null) throw new Error(`consul exited with ${child.exitCode}:\n${output}`);
      try {
        const res = await call(`${url}/v1/status/leader`, { headers: opts.headers ?? {} }, clientTls);
        const leader = res.ok ? JSON.parse(res.text) : "";
        if (leader) {
          // The dev node registers itself right after electing; wait for it so indexes settle.
          const nodes = await call(`${url}/v1/catalog/nodes`, { headers: opts.headers ?? {} }, clientTls);
          if (nodes.ok && (JSON.parse(nodes.text) as unknown[]).length > 0) return;
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
    const res = await call(
      `${url}${path}`,
      { method, headers: { ...opts.headers, ...headers }, ...(body === undefined ? {} : { body: typeof body === "string" ? body : JSON.stringify(body) }) },
      clientTls,
    );
    const text = res.text;
    if (!res.ok) throw new Error(`consul ${method} ${path}: ${res.status} ${text}`);
    try {
      return text ? JSON.parse(text) : undefined;
    } catch {
      return text;
    }
  };

  try {
    await start();
  } catch (err) {
    await stopProcess();
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
  return {
    address: `127.0.0.1:${http}`,
    url,
    port: http,
    serfWanPort: serfWan,
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
    halt: stopProcess,
    resume: start,
    logs: () => output,
    ...(clientTls ? { tls: clientTls } : {}),
  };
}
