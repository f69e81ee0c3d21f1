import { Agent as HttpAgent, request as httpRequest } from "node:http";
import { Agent as HttpsAgent, request as httpsRequest } from "node:https";
import { CtsError, messageOf } from "../errors/cts-error.ts";
import { redactSecret } from "../log/logger.ts";
import { readTlsFiles, type TlsFileSettings } from "../tls-files.ts";

/** Where Vault is and how cts talks to it (CTS's `vault {}` block, env fallbacks applied). */
export interface VaultSettings {
  /** http(s)://host:port */
  address: string;
  token?: string;
  namespace?: string;
  /** CA file or folder, client certificate, server name, verify (VAULT_SKIP_VERIFY is `verify: false`). */
  tls?: TlsFileSettings;
}

/** A secret as Vault answers a read: `data` is what a template sees as `.Data`. */
export interface VaultSecret {
  data: Record<string, unknown>;
  leaseId: string;
  /** Seconds; 0 when the secret has no lease (KV v2). */
  leaseDuration: number;
  renewable: boolean;
}

/** What Vault said about the token after a renewal or a look-up. */
export interface VaultTokenInfo {
  /** Seconds left; 0 for a token that never expires (root). */
  ttl: number;
  renewable: boolean;
}

/** The few Vault calls cts makes (src/vault/ is the one place that talks to Vault). */
export interface VaultClient {
  /** GET /v1/<path>. */
  read(path: string, signal?: AbortSignal): Promise<VaultSecret>;
  /** Renews a secret's lease (PUT /v1/sys/leases/renew). */
  renewLease(leaseId: string, signal?: AbortSignal): Promise<VaultSecret>;
  /** Renews the client's own token (POST /v1/auth/token/renew-self). */
  renewSelf(signal?: AbortSignal): Promise<VaultTokenInfo>;
  /** The client's own token (GET /v1/auth/token/lookup-self). */
  lookupSelf(signal?: AbortSignal): Promise<VaultTokenInfo>;
  /** What the token may do on each path (POST /v1/sys/capabilities-self), without reading anything. */
  capabilities(paths: string[], signal?: AbortSignal): Promise<Record<string, string[]>>;
  /** Unwraps a wrapped token (POST /v1/sys/wrapping/unwrap) and uses the token it held from then on. */
  unwrapToken(signal?: AbortSignal): Promise<void>;
  /** The token in use (after an unwrap, the unwrapped one). */
  token(): string | undefined;
  /** Uses another token from now on (Vault Agent wrote a new one into its sink file). */
  setToken(token: string): void;
  close(): void;
}

/** Vault's error list as one line ("1 error occurred:\n\t* permission denied" → "permission denied"). */
function errorsText(errors: unknown[]): string {
  return errors
    .map((e) => String(e).replace(/^\d+ errors? occurred:\s*/, "").replace(/\s*\*\s+/g, " ").replace(/\s+/g, " ").trim())
    .join("; ");
}

interface Answer {
  status: number;
  body: any;
}

/** A Vault client on node:http(s), one keep-alive socket pool, TLS as the settings say. */
export function createVaultClient(settings: VaultSettings): VaultClient {
  const url = new URL(settings.address);
  const https = url.protocol === "https:";
  const t = settings.tls ?? {};
  const tlsOptions = {
    ...readTlsFiles({ caFile: t.caCert, caPath: t.caPath, cert: t.cert, key: t.key }, (p) => {
      throw new CtsError("CONFIG_INVALID", "usage", `vault.tls: a certificate file cannot be read: ${p.code ? messageOf(p.cause) : `ca_path '${p.file}' holds no PEM certificate`}.`, { cause: p.cause });
    }),
    ...(t.serverName ? { servername: t.serverName } : {}),
    rejectUnauthorized: t.verify !== false,
  };
  const agent = https ? new HttpsAgent({ keepAlive: true, ...tlsOptions }) : new HttpAgent({ keepAlive: true });
  let token = settings.token;

  const call = (method: string, path: string, body?: unknown, signal?: AbortSignal, as?: string): Promise<Answer> =>
    new Promise((resolve, reject) => {
      const headers: Record<string, string> = { accept: "application/json" };
      const auth = as ?? token;
      if (auth) headers["x-vault-token"] = auth;
      if (settings.namespace) headers["x-vault-namespace"] = settings.namespace;
      const payload = body === undefined ? undefined : JSON.stringify(body);
      if (payload !== undefined) headers["content-type"] = "application/json";
      const target = new URL(`/v1/${path.replace(/^\/+/, "")}`, url);
      const req = (https ? httpsRequest : httpRequest)(target, { method, headers, agent, ...(signal ? { signal } : {}) }, (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (d: string) => (text += d));
        res.on("end", () => {
          let parsed: any = undefined;
          try {
            parsed = text ? JSON.parse(text) : undefined;
          } catch {
            parsed = { errors: [text.slice(0, 200)] };
          }
          resolve({ status: res.statusCode ?? 500, body: parsed });
        });
        res.on("error", reject);
      });
      req.on("error", (err) =>
        reject(
          signal?.aborted
            ? err
            : new CtsError("VAULT_UNREACHABLE", "external", `Vault at ${url.origin} cannot be reached: ${messageOf(err)}.`, { cause: err }),
        ),
      );
      req.end(payload);
    });

  /** An answer as a CtsError naming what was asked (never the token). */
  const failure = (what: string, a: Answer): CtsError => {
    const said = Array.isArray(a.body?.errors) && a.body.errors.length ? `: ${errorsText(a.body.errors)}` : "";
    if (a.status === 403) return new CtsError("VAULT_PERMISSION_DENIED", "external", `Vault denied ${what} (403${said}).`, { detail: { status: 403 } });
    if (a.status === 404) return new CtsError("VAULT_SECRET_NOT_FOUND", "usage", `Vault has no secret at ${what} (404).`, { detail: { status: 404 } });
    return new CtsError("VAULT_HTTP_ERROR", "external", `Vault answered ${a.status} to ${what}${said}.`, { detail: { status: a.status } });
  };

  const secretOf = (b: any): VaultSecret => ({
    data: b?.data && typeof b.data === "object" ? b.data : {},
    leaseId: String(b?.lease_id ?? ""),
    leaseDuration: Number(b?.lease_duration ?? 0) || 0,
    renewable: b?.renewable === true,
  });
  const tokenInfo = (b: any): VaultTokenInfo => ({
    ttl: Number(b?.auth?.lease_duration ?? b?.data?.ttl ?? 0) || 0,
    renewable: (b?.auth?.renewable ?? b?.data?.renewable) === true,
  });

  return {
    async read(path, signal) {
      const a = await call("GET", path, undefined, signal);
      if (a.status !== 200) throw failure(`'${path}'`, a);
      return secretOf(a.body);
    },
    async renewLease(leaseId, signal) {
      const a = await call("PUT", "sys/leases/renew", { lease_id: leaseId }, signal);
      if (a.status !== 200) throw failure("the renewal of a secret's lease", a);
      return secretOf(a.body);
    },
    async renewSelf(signal) {
      const a = await call("POST", "auth/token/renew-self", {}, signal);
      if (a.status !== 200) throw failure("the renewal of cts's token", a);
      return tokenInfo(a.body);
    },
    async lookupSelf(signal) {
      const a = await call("GET", "auth/token/lookup-self", undefined, signal);
      if (a.status === 403) throw new CtsError("VAULT_TOKEN_INVALID", "usage", "Vault does not accept cts's token (403 on auth/token/lookup-self).");
      if (a.status !== 200) throw failure("the look-up of cts's token", a);
      return tokenInfo(a.body);
    },
    async capabilities(paths, signal) {
      const a = await call("POST", "sys/capabilities-self", { paths }, signal);
      if (a.status !== 200) throw failure("the capabilities of cts's token (sys/capabilities-self)", a);
      const out: Record<string, string[]> = {};
      for (const p of paths) {
        const caps = a.body?.data?.[p] ?? a.body?.[p] ?? (paths.length === 1 ? (a.body?.data?.capabilities ?? a.body?.capabilities) : undefined);
        out[p] = Array.isArray(caps) ? caps.map(String) : [];
      }
      return out;
    },
    async unwrapToken(signal) {
      const a = await call("POST", "sys/wrapping/unwrap", {}, signal);
      if (a.status !== 200)
        throw new CtsError("VAULT_TOKEN_INVALID", "usage", `vault.unwrap_token: Vault did not unwrap the token (${a.status}${Array.isArray(a.body?.errors) ? `: ${errorsText(a.body.errors)}` : ""}).`);
      const inner = a.body?.auth?.client_token ?? a.body?.data?.token;
      if (typeof inner !== "string" || !inner)
        throw new CtsError("VAULT_TOKEN_INVALID", "usage", "vault.unwrap_token: the wrapped response holds no token (wrap a token, e.g. `vault token create -wrap-ttl=…`).");
      redactSecret(inner);
      token = inner;
    },
    token: () => token,
    setToken(next) {
      redactSecret(next);
      token = next;
    },
    close: () => agent.destroy(),
  };
}
