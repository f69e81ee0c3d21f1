import { Agent as HttpAgent, request as httpRequest } from "node:http";
import { Agent as HttpsAgent, request as httpsRequest } from "node:https";
import { httpsOptions, type ConsulConnection } from "../consul/connection.ts";
import { CtsError, messageOf } from "../errors.ts";

/** One Consul HTTP answer. */
export interface ConsulAnswer {
  status: number;
  /** X-Consul-Index (0 when absent). */
  index: bigint;
  body: string;
}

/** Options of one call. */
export interface CallOptions {
  query?: Record<string, string | undefined>;
  /** JSON body (strings are sent as they are). */
  body?: unknown;
  signal?: AbortSignal;
  /** Hard limit for the whole exchange. */
  timeoutMs?: number;
  /** false: do not add the client's namespace to this call. */
  namespace?: false;
}

/**
 * The few raw Consul calls high availability makes (sessions, locks, transactions) that the
 * catalog client does not offer. The connection is read at every call, so a rotated token file
 * takes effect at the next renewal; token and TLS files travel as the rest of cts sends them.
 */
export interface ConsulHttp {
  call(method: string, path: string, opts?: CallOptions): Promise<ConsulAnswer>;
  /** The URL for error messages (never carries the token). */
  url(): string;
  close(): void;
}

/** An AbortError for cancelled calls, so callers can tell cancellation from failure. */
function aborted(): Error {
  const err = new Error("the Consul request was cancelled");
  err.name = "AbortError";
  return err;
}

/** Creates the client; `namespace` is added as `ns` to every call when set. */
export function createConsulHttp(connection: () => ConsulConnection, namespace?: string): ConsulHttp {
  const httpAgent = new HttpAgent({ keepAlive: true });
  const httpsAgent = new HttpsAgent({ keepAlive: true });
  let tlsFor: { conn: ConsulConnection; options: Record<string, unknown> } | undefined;
  const tls = (conn: ConsulConnection) => {
    if (tlsFor?.conn !== conn) tlsFor = { conn, options: httpsOptions(conn) };
    return tlsFor.options;
  };

  return {
    url: () => connection().url,
    close() {
      httpAgent.destroy();
      httpsAgent.destroy();
    },
    call(method, path, opts = {}) {
      const conn = connection();
      const secure = conn.scheme === "https";
      const params = new URLSearchParams();
      for (const [k, v] of Object.entries(opts.query ?? {})) if (v !== undefined) params.set(k, v);
      if (namespace && opts.namespace !== false) params.set("ns", namespace);
      const qs = params.toString();
      const payload = opts.body === undefined ? undefined : typeof opts.body === "string" ? opts.body : JSON.stringify(opts.body);
      const headers: Record<string, string> = {};
      if (conn.token) headers["x-consul-token"] = conn.token;
      if (payload !== undefined) headers["content-type"] = "application/json";
      const timeoutMs = opts.timeoutMs ?? 10_000;
      return new Promise<ConsulAnswer>((resolve, reject) => {
        if (opts.signal?.aborted) return reject(aborted());
        let settled = false;
        const finish = (err: Error | undefined, answer?: ConsulAnswer) => {
          if (settled) return;
          settled = true;
          clearTimeout(timer);
          opts.signal?.removeEventListener("abort", onAbort);
          if (err) reject(err);
          else resolve(answer!);
        };
        const req = (secure ? httpsRequest : httpRequest)(
          {
            host: conn.host,
            port: conn.port,
            method,
            path: `${path}${qs ? `?${qs}` : ""}`,
            headers,
            agent: secure ? httpsAgent : httpAgent,
            ...(secure ? tls(conn) : {}),
          },
          (res) => {
            let text = "";
            res.setEncoding("utf8");
            res.on("data", (d: string) => (text += d));
            res.on("end", () => {
              const raw = res.headers["x-consul-index"];
              let index = 0n;
              try {
                index = raw ? BigInt(Array.isArray(raw) ? raw[0]! : raw) : 0n;
              } catch {
                index = 0n;
              }
              finish(undefined, { status: res.statusCode ?? 0, index, body: text });
            });
            res.on("error", (e) => finish(e));
          },
        );
        const onAbort = () => {
          req.destroy();
          finish(aborted());
        };
        opts.signal?.addEventListener("abort", onAbort, { once: true });
        // A cut-off agent must not hang a renewal past the fence: the whole exchange is bounded.
        const timer = setTimeout(() => {
          req.destroy();
          finish(new CtsError("HA_CONSUL_TIMEOUT", "external", `Consul at ${conn.url} did not answer ${method} ${path} within ${timeoutMs} ms`));
        }, timeoutMs);
        req.on("error", (e) => finish(new CtsError("HA_CONSUL_UNREACHABLE", "external", `Consul at ${conn.url} is unreachable (${method} ${path}): ${messageOf(e)}`, { cause: e })));
        req.end(payload);
      });
    },
  };
}


/** Whether an error is a cancellation. */
export function isAbort(err: unknown): boolean {
  return err instanceof Error && err.name === "AbortError";
}
