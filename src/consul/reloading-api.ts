import { createConsulApi, type ConsulApi } from "./client.ts";
import type { ConsulConnection } from "./connection.ts";
import type { Metrics } from "../metrics/metrics.ts";
import { createConsulTransport } from "./transport.ts";

/** A ConsulApi whose connection (token) can be replaced while views keep running. */
export interface ReloadingConsulApi extends ConsulApi {
  /** Sends every later request with the new connection. */
  setConnection(conn: ConsulConnection): void;
}

/**
 * A ConsulApi on a transport whose connection can be swapped, so a rotated token takes effect at
 * the next request. Blocking queries already waiting on the old sockets finish normally; those
 * sockets are closed after they must have.
 */
export function createReloadingConsulApi(conn: ConsulConnection, drainMs = 6 * 60_000, metrics?: Metrics): ReloadingConsulApi {
  const transport = createConsulTransport(conn, drainMs, metrics);
  return { ...createConsulApi(transport), setConnection: (next) => transport.setConnection(next) };
}
