import { spawn, type ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { request as httpsRequest } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "./ports.ts";
import { tools } from "./tools.ts";

/** A real OpenBao dev server (Vault's API) on 127.0.0.1 with a free port, in memory. */
export interface VaultServer {
  /** http(s)://127.0.0.1:<port> */
  address: string;
  /** With `tls`: the folder the dev server wrote its CA, certificate and key to (vault-ca.pem). */
  tlsDir?: string;
  rootToken: string;
  /** One API call as root (or as `token`); JSON in, JSON out; throws on a non-2xx answer. */
  api(method: string, path: string, body?: unknown, opts?: { token?: string; headers?: Record<string, string> }): Promise<any>;
  /** Writes a KV v2 secret (mount `secret/`, the dev server's default). */
  putV2(name: string, data: Record<string, unknown>): Promise<void>;
  stop(): Promise<void>;
  logs(): string;
}

/** One HTTP call; over https it trusts the CA of `tlsDir` (the dev server's own). */
function caller(tlsDir: string | undefined) {
  return (url: string, init: { method?: string; headers?: Record<string, string>; body?: string }): Promise<{ status: number; text: string }> => {
    if (!url.startsWith("https:")) return fetch(url, init).then(async (r) => ({ status: r.status, text: await r.text() }));
    return new Promise((resolve, reject) => {
      const req = httpsRequest(url, { method: init.method ?? "GET", headers: init.headers, ca: readFileSync(join(tlsDir!, "vault-ca.pem")) }, (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (d) => (text += d));
        res.on("end", () => resolve({ status: res.statusCode ?? 500, text }));
      });
      req.on("error", reject);
      req.end(init.body);
    });
  };
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

/** Starts `bao server -dev` (with `tls`: -dev-tls, a CA of its own), waits until it answers, and enables KV v1 at `kv/`. */
export async function startVault(opts: { tls?: boolean } = {}): Promise<VaultServer> {
  const tlsDir = opts.tls ? await mkdtemp(join(tmpdir(), "cts-bao-tls-")) : undefined;
  const rootToken = `root-${Math.random().toString(36).slice(2)}`;
  const call = caller(tlsDir);
  let out = "";
  let proc: ChildProcess | undefined;
  let address = "";
  for (let attempt = 0; attempt < 3; attempt++) {
    const port = await portPair();
    address = `${tlsDir ? "https" : "http"}://127.0.0.1:${port}`;
    out = "";
    const tlsArgs = tlsDir ? ["-dev-tls", `-dev-tls-cert-dir=${tlsDir}`] : [];
    if (tlsDir) await rm(tlsDir, { recursive: true, force: true }).then(() => mkdir(tlsDir));
    proc = spawn(tools().bao, ["server", "-dev", ...tlsArgs, `-dev-root-token-id=${rootToken}`, `-dev-listen-address=127.0.0.1:${port}`, "-dev-no-store-token"], {
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
          const res = await call(`${address}/v1/sys/health`, {});
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
  const api = async (method: string, path: string, body?: unknown, o: { token?: string; headers?: Record<string, string> } = {}) => {
    const res = await call(`${address}/v1/${path}`, {
      method,
      headers: { "x-vault-token": o.token ?? rootToken, ...(body === undefined ? {} : { "content-type": "application/json" }), ...o.headers },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${res.text}`);
    return res.text ? JSON.parse(res.text) : undefined;
  };
  await api("POST", "sys/mounts/kv", { type: "kv", options: { version: "1" } });
  return {
    address,
    ...(tlsDir ? { tlsDir } : {}),
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
      if (tlsDir) await rm(tlsDir, { recursive: true, force: true });
    },
  };
}
