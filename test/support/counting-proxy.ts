import { createServer, request as httpRequest, type ClientRequest, type IncomingMessage, type ServerResponse } from "node:http";
import { freePort } from "./ports.ts";

/** A request the proxy saw. */
export interface SeenRequest {
  method: string;
  path: string;
  query: string;
}

/** An HTTP proxy in front of a Consul agent that counts requests per path (long polls pass through). */
export interface CountingProxy {
  /** host:port to give the client under test. */
  address: string;
  /** http://host:port */
  url: string;
  /** Requests to path (no query string) so far. */
  total(path: string): number;
  /** Requests to path still waiting for Consul's answer. */
  inFlight(path: string): number;
  /** The most requests to path that were ever waiting at once. */
  maxInFlight(path: string): number;
  /** Every request seen, in order. */
  requests(): SeenRequest[];
  /** Forgets the counts (in-flight requests stay counted as in flight). */
  reset(): void;
  /** Closes the listener, every client connection and every upstream request. */
  stop(): Promise<void>;
}

/** Starts a counting proxy on 127.0.0.1:<free port> forwarding to `target` (http://host:port). */
export async function startCountingProxy(target: string): Promise<CountingProxy> {
  const upstream = new URL(target);
  const seen: SeenRequest[] = [];
  const totals = new Map<string, number>();
  const current = new Map<string, number>();
  const peaks = new Map<string, number>();
  const open = new Set<ClientRequest>();
  const add = (m: Map<string, number>, k: string, d: number) => m.set(k, (m.get(k) ?? 0) + d);

  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? "/", "http://proxy");
    const path = url.pathname;
    seen.push({ method: req.method ?? "GET", path, query: url.search });
    add(totals, path, 1);
    add(current, path, 1);
    peaks.set(path, Math.max(peaks.get(path) ?? 0, current.get(path)!));
    let finished = false;
    const finish = () => {
      if (finished) return;
      finished = true;
      add(current, path, -1);
    };

    const up = httpRequest(
      {
        hostname: upstream.hostname,
        port: upstream.port,
        method: req.method,
        path: req.url,
        headers: { ...req.headers, host: upstream.host },
        agent: false,
      },
      (upRes) => {
        res.writeHead(upRes.statusCode ?? 502, upRes.headers);
        upRes.pipe(res);
        upRes.on("end", finish);
        upRes.on("error", finish);
      },
    );
    open.add(up);
    up.on("close", () => {
      open.delete(up);
      finish();
    });
    up.on("error", (err) => {
      finish();
      if (!res.headersSent) {
        res.writeHead(502, { "content-type": "text/plain" });
        res.end(`proxy: ${err.message}`);
      } else {
        res.destroy();
      }
    });
    // The client gave up (e.g. its AbortSignal fired): end the long poll upstream too.
    res.on("close", () => {
      if (!res.writableFinished) up.destroy();
      finish();
    });
    req.pipe(up);
  });

  const port = await freePort();
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, "127.0.0.1", () => resolve());
  });

  return {
    address: `127.0.0.1:${port}`,
    url: `http://127.0.0.1:${port}`,
    total: (path) => totals.get(path) ?? 0,
    inFlight: (path) => current.get(path) ?? 0,
    maxInFlight: (path) => peaks.get(path) ?? 0,
    requests: () => [...seen],
    reset() {
      seen.length = 0;
      totals.clear();
      peaks.clear();
      for (const [k, v] of current) peaks.set(k, v);
    },
    async stop() {
      for (const up of open) up.destroy();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await closed;
    },
  };
}
