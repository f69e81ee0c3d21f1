import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { once } from "node:events";
import { createServer, request, type Agent, type IncomingMessage, type ServerResponse } from "node:http";
import { request as httpsRequest } from "node:https";
import { createServer as createTcpServer, type AddressInfo, type Socket } from "node:net";
import { createSocketPool } from "../../src/consul/socket-pool.ts";
import { consulEnvForTerraform, resolveConsulConnection } from "../../src/consul/connection.ts";
import { consulConnectionFor } from "../../src/config/consul-connection.ts";
import { redact } from "../../src/log/logger.ts";

/** A local HTTP server that numbers its connections; `/hold` waits until released. */
async function server() {
  const sockets: Socket[] = [];
  const closed: number[] = [];
  const held: ServerResponse[] = [];
  const heldWaiters: Array<() => void> = [];
  const closeWaiters: Array<() => void> = [];
  const srv = createServer((req: IncomingMessage, res: ServerResponse) => {
    const n = sockets.indexOf(req.socket);
    if (req.url === "/hold") {
      held.push(res);
      heldWaiters.splice(0).forEach((w) => w());
      return;
    }
    res.end(String(n));
  });
  srv.on("connection", (s: Socket) => {
    const n = sockets.push(s) - 1;
    s.on("close", () => {
      closed.push(n);
      closeWaiters.splice(0).forEach((w) => w());
    });
  });
  srv.listen(0, "127.0.0.1");
  await once(srv, "listening");
  const port = (srv.address() as AddressInfo).port;
  return {
    port,
    sockets,
    closed,
    held,
    async untilHeld(n: number) {
      while (held.length < n) await new Promise<void>((r) => heldWaiters.push(r));
    },
    async untilClosed(i: number) {
      while (!closed.includes(i)) await new Promise<void>((r) => closeWaiters.push(r));
    },
    async untilClosedCount(n: number) {
      while (closed.length < n) await new Promise<void>((r) => closeWaiters.push(r));
    },
    async stop() {
      srv.closeAllConnections();
      srv.close();
      await once(srv, "close");
    },
  };
}

/** GETs `path` through `agent`; answers the server's connection number and the client socket's. */
function get(port: number, agent: Agent, path = "/"): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = request({ host: "127.0.0.1", port, path, agent }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (c: string) => (body += c));
      res.on("end", () => resolve(body));
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end();
  });
}

describe("the socket pool to Consul (consul.transport)", () => {
  it("reuses one connection by default, and opens a new one per request with keepAlive off", async () => {
    const s = await server();
    const pooled = createSocketPool(false);
    const single = createSocketPool(false, { keepAlive: false });
    try {
      const a = await get(s.port, pooled);
      const b = await get(s.port, pooled);
      assert.equal(a, b, "keep-alive reuses the connection");
      const c = await get(s.port, single);
      const d = await get(s.port, single);
      assert.notEqual(c, d, "without keep-alive each request has its own connection");
    } finally {
      pooled.destroy();
      single.destroy();
      await s.stop();
    }
  });

  it("keeps at most maxFreeSockets idle connections", async () => {
    const s = await server();
    const pool = createSocketPool(false, { maxFreeSockets: 1 });
    try {
      const holds = [get(s.port, pool, "/hold"), get(s.port, pool, "/hold"), get(s.port, pool, "/hold")];
      await s.untilHeld(3);
      for (const res of s.held) res.end("ok");
      await Promise.all(holds);
      // Two of the three connections are closed by the pool; one stays.
      await s.untilClosedCount(2);
      const free = Object.values(pool.freeSockets).flat();
      assert.equal(free.length, 1);
      assert.equal(s.closed.length, 2);
    } finally {
      pool.destroy();
      await s.stop();
    }
  });

  it("closes an idle pooled connection after freeSocketTimeoutMs, but never cuts a request in flight on a reused one", async () => {
    const s = await server();
    const pool = createSocketPool(false, { freeSocketTimeoutMs: 50 });
    try {
      // Connection 0 serves a short request, sits idle (its limit armed), then carries a long one.
      assert.equal(await get(s.port, pool), "0");
      const long = get(s.port, pool, "/hold");
      await s.untilHeld(1);
      assert.equal(s.sockets.length, 1, "the long request reused the idle connection");
      // Connection 1 serves a short request while 0 is busy, then idles past the limit and is closed.
      assert.equal(await get(s.port, pool), "1");
      await s.untilClosed(1);
      // The long request outlived an idle limit that closed another socket: it is still open.
      assert.deepEqual(s.closed, [1]);
      s.held[0]!.end("answered");
      assert.equal(await long, "answered");
    } finally {
      pool.destroy();
      await s.stop();
    }
  });

  it("fails a connect that never completes after connectTimeoutMs, naming the setting", async () => {
    // A name whose lookup never answers: the socket stays connecting, as to an address that drops SYNs.
    const pool = createSocketPool(false, { connectTimeoutMs: 100 });
    try {
      const err = await new Promise<Error>((resolve) => {
        const req = request({ host: "consul.invalid", port: 8500, path: "/", agent: pool, lookup: () => {} }, () => resolve(new Error("answered")));
        req.on("error", resolve);
        req.end();
      });
      assert.match(err.message, /consul\.transport\.connectTimeoutMs \(100ms\)/);
    } finally {
      pool.destroy();
    }
  });

  it("fails a TLS handshake that never completes after tlsHandshakeTimeoutMs, naming the setting", async () => {
    // A TCP server that accepts and never answers the ClientHello.
    const accepted: Socket[] = [];
    const tcp = createTcpServer((sock) => accepted.push(sock));
    tcp.listen(0, "127.0.0.1");
    await once(tcp, "listening");
    const pool = createSocketPool(true, { tlsHandshakeTimeoutMs: 100 });
    try {
      const err = await new Promise<Error>((resolve) => {
        const req = httpsRequest({ host: "127.0.0.1", port: (tcp.address() as AddressInfo).port, path: "/", agent: pool }, () => resolve(new Error("answered")));
        req.on("error", resolve);
        req.end();
      });
      assert.match(err.message, /consul\.transport\.tlsHandshakeTimeoutMs \(100ms\)/);
    } finally {
      pool.destroy();
      for (const s of accepted) s.destroy();
      tcp.close();
    }
  });
});

describe("consul.auth and consul.tls.caPath in the connection", () => {
  it("takes basic auth from the config, else CONSUL_HTTP_AUTH (user:pass, split at the first colon), and hands it to Terraform", () => {
    assert.deepEqual(resolveConsulConnection({}, { CONSUL_HTTP_AUTH: "ops:s3:cret" }).auth, { username: "ops", password: "s3:cret" });
    assert.deepEqual(resolveConsulConnection({}, { CONSUL_HTTP_AUTH: "ops" }).auth, { username: "ops" });
    const conn = resolveConsulConnection({ auth: { username: "cts", password: "pw" } }, { CONSUL_HTTP_AUTH: "ops:x" });
    assert.deepEqual(conn.auth, { username: "cts", password: "pw" });
    assert.equal(consulEnvForTerraform(conn).CONSUL_HTTP_AUTH, "cts:pw");
    assert.equal(consulEnvForTerraform(resolveConsulConnection({}, {})).CONSUL_HTTP_AUTH, undefined);
  });

  it("takes caPath from the config, else CONSUL_CAPATH, and hands it to Terraform as CONSUL_CAPATH", () => {
    assert.equal(resolveConsulConnection({}, { CONSUL_CAPATH: "/etc/consul/ca" }).tls.caPath, "/etc/consul/ca");
    const conn = resolveConsulConnection({ tls: { caPath: "/cas" } }, { CONSUL_CAPATH: "/other" });
    assert.equal(consulEnvForTerraform(conn).CONSUL_CAPATH, "/cas");
  });

  it("from a config: auth and transport reach the connection, and the password is redacted in every form it travels in", () => {
    const password = `pw-${process.pid}-redact`;
    const conn = consulConnectionFor({ consul: { address: "127.0.0.1:1", auth: { username: "cts", password }, transport: { maxFreeSockets: 2 } }, tasks: [] } as any);
    assert.deepEqual(conn.auth, { username: "cts", password });
    assert.deepEqual(conn.transport, { maxFreeSockets: 2 });
    const line = `CONSUL_HTTP_AUTH=cts:${password} authorization: Basic ${Buffer.from(`cts:${password}`).toString("base64")} ${password}`;
    assert.ok(!redact(line).includes(password) && !redact(line).includes(Buffer.from(`cts:${password}`).toString("base64")), redact(line));
  });

  it("carries the transport limits to the socket pool", () => {
    assert.deepEqual(resolveConsulConnection({ transport: { keepAlive: false, connectTimeoutMs: 5 } }, {}).transport, { keepAlive: false, connectTimeoutMs: 5 });
  });
});
