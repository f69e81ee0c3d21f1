import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

/** One `web` instance: a tiny HTTP server that answers every request with its id. */
export interface WebInstance {
  id: string;
  address: string;
  port: number;
  /** Whether `/health` answers 200 (Consul's check) or 503. Traffic is served either way. */
  readonly healthy: boolean;
  setHealthy(healthy: boolean): void;
  /** Requests it served (health checks excluded). */
  readonly served: number;
  stop(): Promise<void>;
}

/**
 * Starts an instance on 127.0.0.1 with a free port. A failing instance keeps answering traffic on
 * purpose: if its id still shows up through nginx, the pool did not follow Consul — nothing else
 * (a closed port, nginx's own retries) can hide that.
 */
export async function startWebInstance(id: string): Promise<WebInstance> {
  let healthy = true;
  let served = 0;
  const server: Server = createServer((req, res) => {
    if (req.url === "/health") {
      res.writeHead(healthy ? 200 : 503, { "content-type": "text/plain" });
      res.end(healthy ? "ok\n" : "failing\n");
      return;
    }
    served++;
    res.writeHead(200, { "content-type": "text/plain", "x-instance": id, connection: "close" });
    res.end(`${id}\n`);
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    // Port 0: the OS picks a free port, so nothing can take it between choosing and binding.
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  return {
    id,
    address: "127.0.0.1",
    port,
    get healthy() {
      return healthy;
    },
    setHealthy(h: boolean) {
      healthy = h;
    },
    get served() {
      return served;
    },
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** The Consul registration of an instance: service `web` with an HTTP check every second. */
export function webRegistration(instance: WebInstance, service = "web", tags: string[] = ["http"]): Record<string, unknown> {
  return {
    ID: instance.id,
    Name: service,
    Address: instance.address,
    Port: instance.port,
    Tags: tags,
    Meta: { demo: "cts" },
    Check: {
      CheckID: `${instance.id}-http`,
      Name: `HTTP /health on ${instance.id}`,
      HTTP: `http://${instance.address}:${instance.port}/health`,
      // Short interval and timeout: a failure shows in Consul within about a second.
      Interval: "1s",
      Timeout: "1s",
    },
  };
}
