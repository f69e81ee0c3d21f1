import { createAdaptorServer } from "@hono/node-server";
import { maxHeaderSize, type Server } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import type { AddressInfo } from "node:net";
import { CtsError } from "../errors/cts-error.ts";
import { readTlsFiles } from "../tls-files.ts";
import { createApiApp } from "./app.ts";
import { answerClientErrors } from "./client-errors.ts";
import type { BoundAddress, BrowserGuardOptions } from "./browser-guard.ts";
import type { ApiDeps } from "./deps.ts";

/** TLS for the API: a server certificate, and with `verifyIncoming` client certificates checked against `caFile` (or `caPath`). */
export interface ApiTlsOptions {
  certFile: string;
  keyFile: string;
  caFile?: string;
  /** A directory of CA certificates (CTS's `ca_path`); `caFile` wins when both are set, as in CTS. */
  caPath?: string;
  /** Demand a client certificate signed by `caFile` / `caPath` (mutual TLS). */
  verifyIncoming?: boolean;
}

/** Transport and access options of the API server. */
export interface ApiServerOptions extends BrowserGuardOptions {
  tls?: ApiTlsOptions;
  /** Bearer token required on mutating routes. */
  token?: string;
  /** `GET /metrics` needs the token too. */
  metricsRequireToken?: boolean;
}

/** The API's certificate, key and client CA (`caFile`, else the certificates of `caPath`), each failure naming its setting. */
function readApiTls(tls: ApiTlsOptions) {
  return readTlsFiles({ caFile: tls.caFile, caPath: tls.caPath, cert: tls.certFile, key: tls.keyFile }, (p) => {
    if (p.role === "caPath")
      throw new CtsError("API_TLS_FILE", "usage", `cannot use api.tls.caPath '${p.file}' (${p.why}). Point it at a directory of PEM CA certificates.`, { cause: p.cause });
    const field = { caFile: "caFile", cert: "certFile", key: "keyFile" }[p.role];
    throw new CtsError("API_TLS_FILE", "usage", `cannot read api.tls.${field} '${p.file}': ${(p.cause as Error).message}. Fix the path.`, { cause: p.cause });
  });
}

/** Default listen address: loopback only; all interfaces only when configured. */
export const DEFAULT_API_ADDRESS = "127.0.0.1";
/** CTS's default port. */
export const DEFAULT_API_PORT = 8558;

/** A running API server. */
export interface ApiServer {
  /** Starts listening; resolves with the bound address and port (port 0 picks a free one). */
  listen(port?: number, address?: string): Promise<{ address: string; port: number; url: string }>;
  /** Stops accepting, lets requests in flight finish for up to `graceMs`, then drops connections. */
  close(graceMs?: number): Promise<void>;
  /** The node server (tests). */
  readonly server: Server;
}

/** The CTS-compatible HTTP API: the Hono app (app.ts) on Node's HTTP or HTTPS server. */
export function createApiServer(deps: ApiDeps, opts: ApiServerOptions = {}): ApiServer {
  const tls = opts.tls;
  if (tls?.verifyIncoming && !tls.caFile && !tls.caPath)
    throw new CtsError("API_TLS_INVALID", "usage", "api.tls.verifyIncoming needs api.tls.caFile (or caPath): the CA that signs the clients' certificates.");
  let bound: BoundAddress | undefined;
  const app = createApiApp(deps, {
    ...(opts.token ? { token: opts.token } : {}),
    ...(opts.metricsRequireToken ? { metricsRequireToken: true } : {}),
    ...(opts.allowedHosts ? { allowedHosts: opts.allowedHosts } : {}),
    ...(opts.allowedOrigins ? { allowedOrigins: opts.allowedOrigins } : {}),
    tls: tls !== undefined,
    bound: () => bound,
  });
  const server = (
    tls
      ? createAdaptorServer({
          fetch: app.fetch,
          createServer: createHttpsServer,
          serverOptions: {
            ...readApiTls(tls),
            requestCert: tls.verifyIncoming === true,
            rejectUnauthorized: tls.verifyIncoming === true,
          },
        })
      : createAdaptorServer({ fetch: app.fetch })
  ) as Server;
  // Bounds how long a client may take to SEND its request (not how long a run may take).
  server.requestTimeout = 30_000;
  server.headersTimeout = 10_000;
  // Node's own answer to an oversized request is lost to a reset (the unread rest of the request).
  answerClientErrors(server, maxHeaderSize);

  return {
    server,
    listen(port = DEFAULT_API_PORT, address = DEFAULT_API_ADDRESS) {
      return new Promise((resolve, reject) => {
        const onError = (err: NodeJS.ErrnoException) => {
          server.off("listening", onListening);
          const why = err.code === "EADDRINUSE" ? "the port is in use (another cts?)" : err.code === "EADDRNOTAVAIL" ? "the address is not on this host" : err.message;
          reject(
            new CtsError("API_LISTEN_FAILED", "usage", `Cannot serve the API on ${address}:${port}: ${why}. Set api.port / api.address in the config (or --api-port / --api-address).`, {
              cause: err,
            }),
          );
        };
        const onListening = () => {
          server.off("error", onError);
          const a = server.address() as AddressInfo;
          bound = { address: a.address, port: a.port };
          const host = a.family === "IPv6" ? `[${a.address}]` : a.address;
          resolve({ address: a.address, port: a.port, url: `${tls ? "https" : "http"}://${host}:${a.port}` });
        };
        server.once("error", onError);
        server.once("listening", onListening);
        server.listen(port, address);
      });
    },
    async close(graceMs = 5_000) {
      if (!server.listening) return;
      app.closeStreams();
      const closed = new Promise<void>((r) => server.close(() => r()));
      server.closeIdleConnections();
      const timer = setTimeout(() => server.closeAllConnections(), graceMs);
      try {
        await closed;
      } finally {
        clearTimeout(timer);
      }
    },
  };
}
