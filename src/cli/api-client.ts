import { request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";
import { CtsError, messageOf } from "../errors/cts-error.ts";
import { readTlsFiles } from "../tls-files.ts";

/** Default address of a cts daemon's API (CTS's). */
export const DEFAULT_HTTP_ADDR = "http://127.0.0.1:8558";

/** Resolves the API base URL: flag, then CTS_ADDRESS, then the default. `host:port` gets http://. */
export function resolveHttpAddr(flag: string | undefined, env: Record<string, string | undefined> = process.env): string {
  const raw = (flag ?? (env.CTS_ADDRESS?.trim() || undefined) ?? DEFAULT_HTTP_ADDR).trim();
  const source = flag !== undefined ? "--http-addr" : env.CTS_ADDRESS?.trim() ? "CTS_ADDRESS" : "the default address";
  const withScheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(raw) ? raw : `http://${raw}`;
  let url: URL;
  try {
    url = new URL(withScheme);
  } catch {
    throw new CtsError("HTTP_ADDR_INVALID", "usage", `${source} '${raw}' is not an address. Use e.g. http://127.0.0.1:8558.`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:")
    throw new CtsError("HTTP_ADDR_INVALID", "usage", `${source} '${raw}' uses ${url.protocol}//. Use http:// or https://.`);
  return url.origin;
}

/** A JSON answer from the API. */
export type ApiBody = Record<string, any>;

/** TLS and credentials of API calls (flags, else CTS_CACERT, CTS_CAPATH, CTS_CLIENT_CERT, CTS_CLIENT_KEY, CTS_SSL_VERIFY, CTS_HTTP_TOKEN). */
export interface ApiClientOptions {
  caCert?: string;
  /** A directory of CA certificates (CTS's -ca-path); caCert wins when both are set, as in CTS. */
  caPath?: string;
  /** false: do not verify the API's certificate (CTS's -ssl-verify=false). Default true. */
  sslVerify?: boolean;
  clientCert?: string;
  clientKey?: string;
  token?: string;
}

/** Fills client options from the environment where flags left them out. */
export function clientOptionsFrom(flags: ApiClientOptions, env: Record<string, string | undefined> = process.env): ApiClientOptions {
  const pick = (v: string | undefined, name: string) => v ?? (env[name]?.trim() || undefined);
  const out: ApiClientOptions = {};
  const ca = pick(flags.caCert, "CTS_CACERT");
  const caPath = pick(flags.caPath, "CTS_CAPATH");
  // CTS reads CTS_SSL_VERIFY with Go's strconv.ParseBool and ignores a value it cannot parse.
  const envVerify = env.CTS_SSL_VERIFY?.trim();
  const sslVerify = flags.sslVerify ?? (/^(1|t|true)$/i.test(envVerify ?? "") ? true : /^(0|f|false)$/i.test(envVerify ?? "") ? false : undefined);
  const cert = pick(flags.clientCert, "CTS_CLIENT_CERT");
  const key = pick(flags.clientKey, "CTS_CLIENT_KEY");
  const token = pick(flags.token, "CTS_HTTP_TOKEN");
  if (ca) out.caCert = ca;
  if (caPath) out.caPath = caPath;
  if (sslVerify === false) out.sslVerify = false;
  if (cert) out.clientCert = cert;
  if (key) out.clientKey = key;
  if (token) out.token = token;
  return out;
}

/** The files of the flags (or their variables), each failure naming its flag and variable. */
function readClientTls(opts: ApiClientOptions) {
  return readTlsFiles({ caFile: opts.caCert, caPath: opts.caPath, cert: opts.clientCert, key: opts.clientKey }, (p) => {
    if (p.role === "caPath") {
      if (p.code) throw new CtsError("API_TLS_FILE", "usage", `cannot read --ca-path '${p.file}' (${p.code}). Fix --ca-path or CTS_CAPATH.`, { cause: p.cause });
      throw new CtsError("API_TLS_FILE", "usage", `--ca-path '${p.file}' holds no PEM certificate. Point --ca-path (CTS_CAPATH) at a directory of CA certificates.`);
    }
    const [flag, env] = { caFile: ["--ca-cert", "CTS_CACERT"], cert: ["--client-cert", "CTS_CLIENT_CERT"], key: ["--client-key", "CTS_CLIENT_KEY"] }[p.role];
    throw new CtsError("API_TLS_FILE", "usage", `cannot read ${flag} '${p.file}' (${p.code ?? p.cause}). Fix ${flag} or ${env}.`, { cause: p.cause });
  });
}

/** A small client for the cts HTTP API. Non-2xx answers become CtsErrors carrying the API's message. */
export class ApiClient {
  private readonly tls: Record<string, Buffer | Buffer[] | boolean>;
  constructor(
    readonly base: string,
    private readonly opts: ApiClientOptions = {},
  ) {
    this.tls = {
      ...readClientTls(opts),
      ...(opts.sslVerify === false ? { rejectUnauthorized: false } : {}),
    };
  }

  /**
   * Calls the API; `query` values are added as URL parameters. Uses node:http rather than fetch:
   * a run=now may apply for many minutes, and fetch gives up after 5 minutes without headers.
   */
  async call(method: string, path: string, opts: { body?: unknown; query?: Record<string, string | undefined> } = {}): Promise<ApiBody> {
    const params = new URLSearchParams();
    for (const [k, v] of Object.entries(opts.query ?? {})) if (v !== undefined) params.set(k, v);
    const url = new URL(`${this.base}${path}${params.size ? `?${params}` : ""}`);
    const payload = opts.body === undefined ? undefined : JSON.stringify(opts.body);
    let res: { status: number; text: string };
    try {
      res = await new Promise((resolve, reject) => {
        const req = (url.protocol === "https:" ? httpsRequest : httpRequest)(
          url,
          {
            method,
            headers: {
              ...(payload === undefined ? {} : { "content-type": "application/json", "content-length": String(Buffer.byteLength(payload)) }),
              ...(this.opts.token ? { authorization: `Bearer ${this.opts.token}` } : {}),
            },
            ...(url.protocol === "https:" ? this.tls : {}),
          },
          (r) => {
            let text = "";
            r.setEncoding("utf8");
            r.on("data", (d: string) => (text += d));
            r.on("end", () => resolve({ status: r.statusCode ?? 0, text }));
            r.on("error", reject);
          },
        );
        req.on("error", reject);
        req.end(payload);
      });
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? messageOf(err);
      if (/CERT|SSL|TLS/i.test(code))
        throw new CtsError(
          "API_TLS_FAILED",
          "external",
          `TLS with cts at ${this.base} failed (${code}). Pass the CA with --ca-cert (CTS_CACERT) and, when the API demands one, a client certificate with --client-cert/--client-key (CTS_CLIENT_CERT/CTS_CLIENT_KEY).`,
          { cause: err },
        );
      throw new CtsError(
        "API_UNREACHABLE",
        "external",
        `Cannot reach cts at ${this.base} (${code}). Is \`cts watch\` running there? Point --http-addr or CTS_ADDRESS at it.`,
        { cause: err },
      );
    }
    let body: ApiBody = {};
    try {
      body = res.text.trim() ? (JSON.parse(res.text) as ApiBody) : {};
    } catch {
      if (res.status < 400) throw new CtsError("API_BAD_ANSWER", "external", `${method} ${url} answered ${res.status} with a body that is not JSON.`);
    }
    if (res.status >= 400 || res.status < 200) {
      const message = typeof body?.error?.message === "string" ? body.error.message : res.text.slice(0, 300) || `HTTP ${res.status}`;
      const id = typeof body?.request_id === "string" ? ` (request ${body.request_id})` : "";
      throw new CtsError(res.status < 500 ? "API_REQUEST_REFUSED" : "API_REQUEST_FAILED", res.status < 500 ? "usage" : "external", `${message}${id}`, { detail: { status: res.status } });
    }
    return body;
  }

  /** Path of a task route with the name escaped. */
  static taskPath(name: string, prefix = "/v1/tasks"): string {
    return `${prefix}/${encodeURIComponent(name)}`;
  }
}
