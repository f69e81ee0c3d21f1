import { createConsulApi, type ConsulApi } from "./client.ts";
import type { ConsulConnection } from "./connection.ts";

/** A ConsulApi whose connection (token) can be replaced while views keep running. */
export interface ReloadingConsulApi extends ConsulApi {
  /** Sends every later request with the new connection. */
  setConnection(conn: ConsulConnection): void;
}

/**
 * Wraps createConsulApi so a rotated token takes effect at the next request. Blocking queries
 * already waiting on the old client finish normally; its sockets are closed after they must have.
 */
export function createReloadingConsulApi(conn: ConsulConnection, drainMs = 6 * 60_000): ReloadingConsulApi {
  let api = createConsulApi(conn);
  const retired = new Set<ReturnType<typeof setTimeout>>();
  return {
    healthService: (req, opts) => api.healthService(req, opts),
    catalogServices: (req, opts) => api.catalogServices(req, opts),
    kv: (req, opts) => api.kv(req, opts),
    setConnection(next) {
      const old = api;
      api = createConsulApi(next);
      const t = setTimeout(() => {
        retired.delete(t);
        old.close();
      }, drainMs);
      t.unref();
      retired.add(t);
    },
    close() {
      for (const t of retired) clearTimeout(t);
      api.close();
    },
  };
}
