import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { connect } from "node:net";
import { maxHeaderSize } from "node:http";
import { createApiServer, type ApiServer } from "../../src/api/server.ts";
import type { ApiController } from "../../src/api/deps.ts";
import { createLogger } from "../../src/log/logger.ts";
import { EventStore } from "../../src/runtime/events.ts";

/** A controller with no tasks: these requests never reach a handler that needs more. */
const noTasks = { events: new EventStore(), taskNames: () => [], view: () => undefined } as unknown as ApiController;

/** What the server sent back on a fresh connection for `request`, read until it closed the connection (or `error` when it reset it). */
function exchange(port: number, request: string): Promise<{ text: string; error?: string }> {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1");
    const chunks: Buffer[] = [];
    let error: string | undefined;
    socket.on("data", (d) => chunks.push(d));
    socket.on("error", (e: NodeJS.ErrnoException) => (error = e.code ?? e.message));
    socket.on("close", () => resolve({ text: Buffer.concat(chunks).toString("latin1"), ...(error ? { error } : {}) }));
    socket.end(request);
  });
}

const statusLine = (text: string) => text.split("\r\n", 1)[0];
const bodyOf = (text: string) => text.slice(text.indexOf("\r\n\r\n") + 4);
const headerOf = (text: string, name: string) => new RegExp(`^${name}: (.*)$`, "im").exec(text.slice(0, text.indexOf("\r\n\r\n")))?.[1];

describe("requests larger than the API accepts", () => {
  let server: ApiServer;
  let port: number;

  before(async () => {
    server = createApiServer({ controller: noTasks, log: createLogger({ level: "error" }) });
    port = (await server.listen(0, "127.0.0.1")).port;
  });
  after(() => server.close());

  it("answers a 100 KB request path with 414 URI Too Long, says the limit and closes the connection", async () => {
    const r = await exchange(port, `GET /${"a".repeat(100_000)} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`);
    assert.equal(r.error, undefined, "an answer and a close, not a reset");
    assert.equal(statusLine(r.text), "HTTP/1.1 414 URI Too Long");
    assert.equal(headerOf(r.text, "Connection"), "close");
    assert.match(bodyOf(r.text), new RegExp(`${maxHeaderSize} bytes`));
  });

  it("answers a 40 KB header with 431 Request Header Fields Too Large, says the limit and closes the connection", async () => {
    const r = await exchange(port, `GET /v1/status HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nX-Padding: ${"b".repeat(40_000)}\r\n\r\n`);
    assert.equal(r.error, undefined, "an answer and a close, not a reset");
    assert.equal(statusLine(r.text), "HTTP/1.1 431 Request Header Fields Too Large");
    assert.equal(headerOf(r.text, "Connection"), "close");
    assert.match(bodyOf(r.text), new RegExp(`${maxHeaderSize} bytes`));
  });

  it("still answers a long but allowed bad path itself: 400, the task name is not valid", async () => {
    const r = await exchange(port, `GET /v1/tasks/${"a".repeat(10_000)} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: close\r\n\r\n`);
    assert.equal(r.error, undefined);
    assert.equal(statusLine(r.text), "HTTP/1.1 400 Bad Request");
    assert.match(bodyOf(r.text), /not a valid task name/);
  });

  it("answers other malformed requests with 400 and a close", async () => {
    const r = await exchange(port, "NOT HTTP AT ALL\r\n\r\n");
    assert.equal(r.error, undefined);
    assert.equal(statusLine(r.text), "HTTP/1.1 400 Bad Request");
  });

  it("serves a normal request on a new connection after refusing oversized ones", async () => {
    await exchange(port, `GET /${"a".repeat(100_000)} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`);
    await exchange(port, `GET / HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nX-Padding: ${"b".repeat(40_000)}\r\n\r\n`);
    const r = await exchange(port, `GET /v1/tasks HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: close\r\n\r\n`);
    assert.equal(statusLine(r.text), "HTTP/1.1 200 OK");
  });
});
