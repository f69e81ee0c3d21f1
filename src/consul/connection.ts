import { readTlsFiles, type TlsFileProblem } from "../tls-files.ts";
import { CtsError } from "../errors/cts-error.ts";

/** TLS settings for talking to Consul (file paths, as in CTS's `consul { tls { … } }`). */
export interface ConsulTlsOptions {
  /** Use HTTPS even when the address has no scheme (CTS's `tls.enabled`). */
  enabled?: boolean;
  /** CA certificate (PEM) that signed Consul's certificate. */
  caFile?: string;
  /** A directory of CA certificates (PEM files; CTS's `ca_path`); `caFile` wins when both are set, as in Consul's clients. */
  caPath?: string;
  /** Client certificate (PEM) for mutual TLS. */
  certFile?: string;
  /** Client key (PEM) for mutual TLS. */
  keyFile?: string;
  /** The name to verify Consul's certificate against (SNI). */
  serverName?: string;
  /** Skip verifying Consul's certificate (never in production). */
  insecureSkipVerify?: boolean;
}

/** HTTP basic auth sent on every request to Consul (CTS's `consul { auth { … } }`), e.g. for a proxy in front of it. */
export interface ConsulAuth {
  username: string;
  /** Never logged or written to files. */
  password?: string;
}

/**
 * Limits of the one HTTP socket pool to Consul, in Node's terms (the config's `consul.transport`;
 * unset fields keep Node's defaults). Durations are milliseconds.
 */
export interface ConsulTransportOptions {
  /** Reuse connections (default true). */
  keepAlive?: boolean;
  /** TCP keep-alive delay of a socket. */
  keepAliveMsecs?: number;
  /** Idle sockets kept in the pool. */
  maxFreeSockets?: number;
  /** An idle pooled socket is closed after this long; never applies to a socket with a request on it. */
  freeSocketTimeoutMs?: number;
  /** Time limit of the TCP connect. */
  connectTimeoutMs?: number;
  /** Time limit of the TLS handshake after the connect. */
  tlsHandshakeTimeoutMs?: number;
}

/** How to reach Consul, as the user wrote it; every field falls back to Consul's usual environment variables. */
export interface ConsulConnectionConfig {
  /** `host:port`, `http://host:port` or `https://host:port` (env CONSUL_HTTP_ADDR, default 127.0.0.1:8500). */
  address?: string;
  /** ACL token (env CONSUL_HTTP_TOKEN, then CONSUL_TOKEN). */
  token?: string;
  /** TLS (env CONSUL_HTTP_SSL, CONSUL_CACERT, CONSUL_CAPATH, CONSUL_CLIENT_CERT, CONSUL_CLIENT_KEY, CONSUL_TLS_SERVER_NAME). */
  tls?: ConsulTlsOptions;
  /** HTTP basic auth (env CONSUL_HTTP_AUTH, `user:pass`). */
  auth?: ConsulAuth;
  /** Limits of the socket pool. */
  transport?: ConsulTransportOptions;
}

/** A fully resolved Consul connection: what the HTTP client and Terraform's environment are built from. */
export interface ConsulConnection {
  /** "http" or "https". */
  scheme: "http" | "https";
  /** Host name or IP (IPv6 without brackets). */
  host: string;
  /** TCP port. */
  port: number;
  /** `host:port` (IPv6 in brackets). */
  address: string;
  /** `scheme://host:port`. */
  url: string;
  /** ACL token, if any. Never log this object as a whole. */
  token?: string;
  /** TLS file paths and options (only meaningful for https). */
  tls: Omit<ConsulTlsOptions, "enabled">;
  /** HTTP basic auth, if any. Never log this object as a whole. */
  auth?: ConsulAuth;
  /** Limits of the socket pool. */
  transport?: ConsulTransportOptions;
}

type Env = Record<string, string | undefined>;

const DEFAULT_ADDRESS = "127.0.0.1:8500";

/** Resolves a Consul connection from config, falling back to Consul's environment variables. */
export function resolveConsulConnection(cfg: ConsulConnectionConfig = {}, env: Env = process.env): ConsulConnection {
  const raw = (cfg.address ?? nonEmpty(env.CONSUL_HTTP_ADDR) ?? DEFAULT_ADDRESS).trim();
  const field = cfg.address !== undefined ? "consul.address" : env.CONSUL_HTTP_ADDR ? "CONSUL_HTTP_ADDR" : "the default address";
  const tlsCfg = cfg.tls ?? {};
  const tls: ConsulConnection["tls"] = {
    caFile: tlsCfg.caFile ?? nonEmpty(env.CONSUL_CACERT),
    caPath: tlsCfg.caPath ?? nonEmpty(env.CONSUL_CAPATH),
    certFile: tlsCfg.certFile ?? nonEmpty(env.CONSUL_CLIENT_CERT),
    keyFile: tlsCfg.keyFile ?? nonEmpty(env.CONSUL_CLIENT_KEY),
    serverName: tlsCfg.serverName ?? nonEmpty(env.CONSUL_TLS_SERVER_NAME),
    insecureSkipVerify: tlsCfg.insecureSkipVerify ?? (env.CONSUL_HTTP_SSL_VERIFY !== undefined ? !truthy(env.CONSUL_HTTP_SSL_VERIFY) : undefined),
  };
  for (const k of Object.keys(tls) as (keyof typeof tls)[]) if (tls[k] === undefined) delete tls[k];

  const schemeMatch = /^([a-z][a-z0-9+.-]*):\/\//i.exec(raw);
  const explicit = schemeMatch?.[1]?.toLowerCase();
  if (explicit !== undefined && explicit !== "http" && explicit !== "https") {
    throw new CtsError(
      "CONSUL_ADDRESS_INVALID",
      "usage",
      `${field} '${raw}' uses the scheme '${explicit}://', which cts does not support. Use host:port, http://host:port or https://host:port.`,
      { detail: { field } },
    );
  }
  // As in Consul's own clients: certificate files alone do not switch the scheme.
  const wantsTls = tlsCfg.enabled ?? truthy(env.CONSUL_HTTP_SSL);
  if (explicit === "http" && tlsCfg.enabled === true) {
    throw new CtsError(
      "CONSUL_ADDRESS_INVALID",
      "usage",
      `${field} '${raw}' says http:// but consul.tls.enabled is true. Use an https:// address or disable TLS.`,
      { detail: { field } },
    );
  }
  const scheme: "http" | "https" = explicit === "https" || (explicit === undefined && wantsTls) ? "https" : "http";
  if ((tls.certFile === undefined) !== (tls.keyFile === undefined)) {
    throw new CtsError(
      "CONSUL_TLS_INVALID",
      "usage",
      `Consul TLS needs both a client certificate and its key, but only the ${tls.certFile ? "certificate" : "key"} is set. Set both consul.tls.certFile and consul.tls.keyFile (or CONSUL_CLIENT_CERT and CONSUL_CLIENT_KEY), or neither.`,
    );
  }

  let url: URL;
  try {
    url = new URL(explicit ? raw : `${scheme}://${raw}`);
  } catch (cause) {
    throw new CtsError("CONSUL_ADDRESS_INVALID", "usage", `${field} '${raw}' is not a valid address. Use host:port, e.g. 127.0.0.1:8500.`, {
      cause,
      detail: { field },
    });
  }
  if (!url.hostname || (url.pathname !== "/" && url.pathname !== "") || url.search || url.username) {
    throw new CtsError(
      "CONSUL_ADDRESS_INVALID",
      "usage",
      `${field} '${raw}' must be just a host and port (no path, query or credentials). Use host:port, e.g. 127.0.0.1:8500.`,
      { detail: { field } },
    );
  }
  // Consul's own clients default to 8500 whatever the scheme; match them rather than URL's 80/443.
  const port = url.port ? Number(url.port) : 8500;
  const host = url.hostname.replace(/^\[(.*)\]$/, "$1");
  const hostPart = host.includes(":") ? `[${host}]` : host;
  const token = cfg.token ?? nonEmpty(env.CONSUL_HTTP_TOKEN) ?? nonEmpty(env.CONSUL_TOKEN);
  const auth = cfg.auth ?? authFromEnv(env.CONSUL_HTTP_AUTH);
  return {
    scheme,
    host,
    port,
    address: `${hostPart}:${port}`,
    url: `${scheme}://${hostPart}:${port}`,
    ...(token ? { token } : {}),
    tls,
    ...(auth ? { auth } : {}),
    ...(cfg.transport ? { transport: cfg.transport } : {}),
  };
}

/** CONSUL_HTTP_AUTH as Consul's clients read it: `user:pass`, split at the first colon (no colon: a user name alone). */
function authFromEnv(raw: string | undefined): ConsulAuth | undefined {
  if (raw === undefined || raw === "") return undefined;
  const at = raw.indexOf(":");
  return at < 0 ? { username: raw } : { username: raw.slice(0, at), password: raw.slice(at + 1) };
}

/** The `Authorization` header value of basic auth, if any. */
export function basicAuthHeader(auth: ConsulAuth | undefined): string | undefined {
  if (!auth) return undefined;
  return `Basic ${Buffer.from(`${auth.username}:${auth.password ?? ""}`, "utf8").toString("base64")}`;
}

/**
 * The environment a Terraform child process needs to reach the same Consul (state backend and the
 * consul provider read these). Secrets go through the environment only, never into files.
 */
export function consulEnvForTerraform(conn: ConsulConnection): Record<string, string> {
  const env: Record<string, string> = { CONSUL_HTTP_ADDR: conn.url };
  if (conn.token) env.CONSUL_HTTP_TOKEN = conn.token;
  if (conn.scheme === "https") env.CONSUL_HTTP_SSL = "true";
  if (conn.auth) env.CONSUL_HTTP_AUTH = conn.auth.password !== undefined ? `${conn.auth.username}:${conn.auth.password}` : conn.auth.username;
  if (conn.tls.caFile) env.CONSUL_CACERT = conn.tls.caFile;
  if (conn.tls.caPath) env.CONSUL_CAPATH = conn.tls.caPath;
  if (conn.tls.certFile) env.CONSUL_CLIENT_CERT = conn.tls.certFile;
  if (conn.tls.keyFile) env.CONSUL_CLIENT_KEY = conn.tls.keyFile;
  if (conn.tls.serverName) env.CONSUL_TLS_SERVER_NAME = conn.tls.serverName;
  if (conn.tls.insecureSkipVerify) env.CONSUL_HTTP_SSL_VERIFY = "false";
  return env;
}

function nonEmpty(v: string | undefined): string | undefined {
  return v === undefined || v.trim() === "" ? undefined : v.trim();
}

/** Go's strconv.ParseBool truthy values, which is how Consul reads CONSUL_HTTP_SSL. */
function truthy(v: string | undefined): boolean {
  return v !== undefined && ["1", "t", "true"].includes(v.trim().toLowerCase());
}

/**
 * node:https options for a connection (CA, client certificate, server name, verification): the one
 * TLS builder every Consul call uses. An unreadable file fails naming the setting to fix.
 */
export function httpsOptions(conn: ConsulConnection): Record<string, unknown> {
  const pems = readTlsFiles({ caFile: conn.tls.caFile, caPath: conn.tls.caPath, cert: conn.tls.certFile, key: conn.tls.keyFile }, consulTlsFileError);
  return {
    ...pems,
    ...(conn.tls.serverName ? { servername: conn.tls.serverName } : {}),
    rejectUnauthorized: conn.tls.insecureSkipVerify !== true,
  };
}

/** A Consul TLS file that cannot be used, naming the setting and the variable to fix. */
function consulTlsFileError(p: TlsFileProblem): never {
  if (p.role === "caPath")
    throw new CtsError("CONSUL_TLS_FILE", "usage", `Cannot use caPath '${p.file}' (${p.why}). Fix consul.tls.caPath (ca_path in a CTS config) or CONSUL_CAPATH: a directory of PEM CA certificates.`, {
      cause: p.cause,
      detail: { field: "consul.tls.caPath", file: p.file },
    });
  const [field, env] = { caFile: ["caFile", "CONSUL_CACERT"], cert: ["certFile", "CONSUL_CLIENT_CERT"], key: ["keyFile", "CONSUL_CLIENT_KEY"] }[p.role];
  throw new CtsError("CONSUL_TLS_FILE", "usage", `Cannot read ${field} '${p.file}' (${p.code ?? p.cause}). Fix consul.tls.${field} or ${env}.`, {
    cause: p.cause,
    detail: { field: `consul.tls.${field}`, file: p.file },
  });
}
