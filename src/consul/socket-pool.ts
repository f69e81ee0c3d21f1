import { Agent as HttpAgent, type AgentOptions } from "node:http";
import { Agent as HttpsAgent } from "node:https";
import type { Socket } from "node:net";
import type { Duplex } from "node:stream";
import type { ConsulTransportOptions } from "./connection.ts";

/**
 * The one socket pool to Consul (an http(s).Agent) with the limits of `consul.transport`:
 * keep-alive on/off and its TCP delay, the idle sockets kept, how long an idle socket may stay,
 * and time limits of the TCP connect and the TLS handshake.
 *
 * The idle limit is set on a socket only while it sits in the pool and cleared when a request
 * takes it, so a blocking query (which sends nothing for minutes) is never cut by it; Node's
 * agent already closes a pooled socket whose timeout fires.
 */
export function createSocketPool(secure: boolean, limits: ConsulTransportOptions = {}): HttpAgent | HttpsAgent {
  const options: AgentOptions = { keepAlive: limits.keepAlive ?? true };
  if (limits.keepAliveMsecs !== undefined) options.keepAliveMsecs = limits.keepAliveMsecs;
  if (limits.maxFreeSockets !== undefined) options.maxFreeSockets = limits.maxFreeSockets;
  const Base = secure ? HttpsAgent : HttpAgent;
  const freeMs = limits.freeSocketTimeoutMs;
  const connectMs = limits.connectTimeoutMs;
  const handshakeMs = secure ? limits.tlsHandshakeTimeoutMs : undefined;

  const agent = new Base(options);
  // Node's Agent hooks as they behave at run time (its typings say keepSocketAlive answers void).
  const pool = agent as unknown as {
    keepSocketAlive(socket: Socket): boolean;
    reuseSocket(socket: Socket, req: unknown): void;
    createConnection(opts: unknown, cb?: unknown): Duplex;
  };
  if (freeMs !== undefined && freeMs > 0) {
    const keep = pool.keepSocketAlive.bind(pool);
    const reuse = pool.reuseSocket.bind(pool);
    pool.keepSocketAlive = (socket) => {
      const kept = keep(socket);
      if (kept) socket.setTimeout(freeMs);
      return kept;
    };
    pool.reuseSocket = (socket, req) => {
      socket.setTimeout(0);
      reuse(socket, req);
    };
  }
  if ((connectMs !== undefined && connectMs > 0) || (handshakeMs !== undefined && handshakeMs > 0)) {
    const create = pool.createConnection.bind(pool);
    pool.createConnection = (opts, cb) => {
      const socket = create(opts, cb);
      guard(socket, connectMs, "connect", `connecting to Consul took longer than consul.transport.connectTimeoutMs (${connectMs}ms)`);
      if (handshakeMs !== undefined && handshakeMs > 0) {
        // The handshake's limit starts once the TCP connect is done.
        socket.once("connect", () =>
          guard(socket, handshakeMs, "secureConnect", `the TLS handshake with Consul took longer than consul.transport.tlsHandshakeTimeoutMs (${handshakeMs}ms)`),
        );
      }
      return socket;
    };
  }
  return agent;
}

/** Destroys `socket` with a timeout error unless `done` happens within `ms` (or it closes first). */
function guard(socket: Duplex, ms: number | undefined, done: string, message: string): void {
  if (ms === undefined || ms <= 0) return;
  // No errno code: the error mapping then quotes this message, which names the setting.
  const timer = setTimeout(() => socket.destroy(new Error(message)), ms);
  const clear = (): void => clearTimeout(timer);
  socket.once(done, clear);
  socket.once("close", clear);
}
