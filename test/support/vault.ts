import { spawn, type ChildProcess } from "node:child_process";
import { freePort } from "./ports.ts";
import { tools } from "./tools.ts";

/** A real OpenBao dev server (Vault's API) on 127.0.0.1 with a free port, in memory. */
export interface VaultServer {
  /** http://127.0.0.1:<port> */
  address: string;
  rootToken: string;
  /** One API call as root (or as `token`); JSON in, JSON out; throws on a non-2xx answer. */
  api(method: string, path: string, body?: unknown, opts?: { token?: string; headers?: Record<string, string> }): Promise<any>;
  /** Writes a KV v2 secret (mount `secret/`, the dev server's default). */
  putV2(name: string, data: Record<string, unknown>): Promise<void>;
  stop(): Promise<void>;
  logs(): string;
}

/** Two free ports in a row: the dev server also listens on port+1 (its cluster port). */
async function portPair(): Promise<number> {
  for (let i = 0; i < 50; i++) {
    const p = await freePort();
    const q = await freePort();
    if (q === p + 1 || (await isFree(p + 1))) return p;
  }
  throw new Error("no two free ports in a row on 127.0.0.1");
}

async function isFree(port: number): Promise<boolean> {
  const { createServer } = await import("node:net");
  return new Promise((resolve) => {
    const s = createServer();
    s.once("error", () => resolve(false));
    s.listen(port, "127.0.0.1", () => s.close(() => resolve(true)));
  });
}

/** Starts `bao server -dev`, waits until it answers, and enables KV v1 at `kv/`. */
export async function startVault(): Promise<VaultServer> {
  const rootToken = `root-${Math.random().toString(36).slice(2)}`;
  let out = "";
  let proc: ChildProcess | undefined;
  let address = "";
  for (let attempt = 0; attempt < 3; attempt++) {
    const port = await portPair();
    address = `http://127.0.0.1:${port}`;
    out = "";
    proc = spawn(tools().bao, ["server", "-dev", `-dev-root-token-id=${rootToken}`, `-dev-listen-address=127.0.0.1:${port}`, "-dev-no-store-token"], {
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, HOME: process.env.HOME ?? "/tmp" },
    });
    proc.stdout!.on("data", (d) => (out += d));
    proc.stderr!.on("data", (d) => (out += d));
    const exited = new Promise<boolean>((r) => proc!.once("exit", () => r(false)));
    const up = (async () => {
      const deadline = Date.now() + 60_000;
      while (Date.now() < deadline && proc!.exitCode === null) {
        try {
          const res = await fetch(`${address}/v1/sys/health`);
          if (res.status === 200) return true;
        } catch {
          /* not listening yet */
        }
        await new Promise((r) => setTimeout(r, 100));
      }
      return false;
    })();
    if (await Promise.race([up, exited])) break;
    proc.kill("SIGKILL");
    proc = undefined;
  }
  if (!proc) throw new Error(`bao server -dev did not start:\n${out}`);
  const child = proc;
  const api = async (method: string, path: string, body?: unknown, opts: { token?: string; headers?: Record<string, string> } = {}) => {
    const res = await fetch(`${address}/v1/${path}`, {
      method,
      headers: { "x-vault-token": opts.token ?? rootToken, ...(body === undefined ? {} : { "content-type": "application/json" }), ...opts.headers },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`);
    return text ? JSON.parse(text) : undefined;
  };
  await api("POST", "sys/mounts/kv", { type: "kv", options: { version: "1" } });
  return {
    address,
    rootToken,
    api,
    putV2: async (name, data) => void (await api("POST", `secret/data/${name}`, { data })),
    logs: () => out,
    stop: async () => {
      if (child.exitCode !== null) return;
      const gone = new Promise((r) => child.once("exit", r));
      child.kill("SIGTERM");
      const t = setTimeout(() => child.kill("SIGKILL"), 10_000);
      await gone;
      clearTimeout(t);
    },
  };
}
