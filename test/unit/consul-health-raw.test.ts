import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Agent } from "node:http";
import { getEventListeners } from "node:events";
import { createConsulClient } from "../../src/consul/client.ts";
import { rawGet } from "../../src/consul/raw-get.ts";
import { CtsError } from "../../src/errors/cts-error.ts";
import { isRefusedServiceName } from "../../src/consul/api-error.ts";
import { quote } from "../../src/values/quote.ts";
import { deferred } from "../support/waits.ts";

/** A stand-in for the agent's health endpoint (unit level: the real agent is in the integration tests). */
describe("healthService over the raw GET", () => {
  let server: Server;
  let address = "";
  const seen: { url: string; token: string | undefined }[] = [];
  let reply: { status: number; body: string } = { status: 200, body: "[]" };
  before(async () => {
    server = createServer((req, res) => {
      seen.push({ url: req.url ?? "", token: req.headers["x-consul-token"] as string | undefined });
      res.writeHead(reply.status, { "content-type": "application/json", "x-consul-index": "42" });
      res.end(reply.body);
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    address = `127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => new Promise<void>((r) => server.close(() => r())));

  const entry = { Node: { Node: "n1", Address: "10.0.0.1" }, Service: { ID: "w1", Service: "web" }, Checks: [] };

  it("sends the token, blocking options and filters, and digests the body so an identical answer is not parsed again", async () => {
    const api = createConsulClient({ address, token: "secret" });
    try {
      reply = { status: 200, body: JSON.stringify([entry]) };
      const first = await api.healthService({ service: "web/x", passing: true, filter: 'Service.Tags contains "a"' }, { index: 7n, wait: 1000, digestBody: true });
      assert.equal(first.index, 42n);
      assert.equal(first.data[0]!.Service.ID, "w1");
      assert.ok(first.bodyDigest);
      const url = new URL(seen.at(-1)!.url, "http://x");
      assert.equal(url.pathname, "/v1/health/service/web%2Fx");
      assert.equal(url.searchParams.get("passing"), "true");
      assert.equal(url.searchParams.get("index"), "7");
      assert.equal(url.searchParams.get("wait"), "1000ms");
      assert.equal(url.searchParams.get("filter"), 'Service.Tags contains "a"');
      assert.equal(seen.at(-1)!.token, "secret");

      const again = await api.healthService({ service: "web" }, { index: 7n, sameAs: first.bodyDigest! });
      assert.equal(again.unchanged, true);
      assert.deepEqual(again.data, []);

      reply = { status: 200, body: JSON.stringify([entry, entry]) };
      const changed = await api.healthService({ service: "web" }, { sameAs: first.bodyDigest! });
      assert.equal(changed.unchanged, undefined);
      assert.equal(changed.data.length, 2);
    } finally {
      api.close();
    }
  });

  it("maps an error answer with Consul's reply, and a body that is not JSON, to CtsErrors", async () => {
    const api = createConsulClient({ address });
    try {
      reply = { status: 403, body: "Permission denied: token lacks service:read" };
      const denied = await api.healthService({ service: "web" }).catch((e: unknown) => e);
      assert.ok(denied instanceof CtsError);
      assert.equal(denied.code, "CONSUL_PERMISSION_DENIED");
      assert.equal(denied.detail.status, 403);
      assert.match(denied.message, /Permission denied/);

      reply = { status: 200, body: "<html>" };
      const garbled = await api.healthService({ service: "web" }).catch((e: unknown) => e);
      assert.ok(garbled instanceof CtsError);
      assert.equal(garbled.code, "CONSUL_HTTP_ERROR");
    } finally {
      api.close();
    }
  });

  it("tells a name Consul cannot serve (an empty 400 to a name with a character Go does not print) from every other 400", async () => {
    const api = createConsulClient({ address });
    const outcome = (service: string, filter?: string): Promise<CtsError> =>
      api.healthService({ service, ...(filter ? { filter } : {}) }).then(() => assert.fail(`a 400 for ${quote(service)} is an error`), (e: unknown) => e as CtsError);
    try {
      // What Consul's path check answers: 400, no body.
      reply = { status: 400, body: "" };
      for (const name of ["odd\nline", "odd\u0000nul", "odd\ttab", "odd\u00a0nbsp", "odd\u2028sep"]) {
        const err = await outcome(name);
        assert.ok(isRefusedServiceName(err), `${JSON.stringify(name)} is a name Consul cannot serve`);
        assert.equal(err.code, "CONSUL_BAD_REQUEST");
        assert.ok(err.message.includes(quote(name)), "the name is quoted");
        assert.doesNotMatch(err.message, /[\n\t\u0000\u00a0\u2028]/, "no unprintable character of the name reaches the message");
      }
      const plain = await outcome("web");
      assert.equal(plain.code, "CONSUL_BAD_REQUEST");
      assert.equal(isRefusedServiceName(plain), false, "a printable name's 400 is not about the name");
      assert.ok(!isRefusedServiceName(await outcome("we b ü-ok.1_/:@")), "ASCII space, letters and punctuation are printable");

      // A bad filter: Consul gives a reason, so it stays a failure even for an odd name.
      reply = { status: 400, body: 'Failed to create boolean expression evaluator: 1:1 (0): no match found, expected: "!"' };
      const badFilter = await outcome("odd\nline", "=== nonsense");
      assert.equal(badFilter.code, "CONSUL_BAD_REQUEST");
      assert.equal(isRefusedServiceName(badFilter), false);

      reply = { status: 403, body: "" };
      assert.equal(isRefusedServiceName(await outcome("odd\nline")), false, "only a 400 is a refusal");
    } finally {
      api.close();
    }
  });

  it("gives up on a request that hears nothing for its time limit, as a timeout", async () => {
    const hang = createServer(() => {});
    await new Promise<void>((r) => hang.listen(0, "127.0.0.1", r));
    const agent = new Agent({ keepAlive: true });
    try {
      const target = { secure: false, host: "127.0.0.1", port: (hang.address() as AddressInfo).port, agent, tls: {}, headers: {} };
      const err = (await rawGet(target, "/v1/health/service/web", 50).catch((e: unknown) => e)) as { isTimeout?: boolean };
      assert.equal(err.isTimeout, true);
    } finally {
      agent.destroy();
      hang.closeAllConnections();
      await new Promise<void>((r) => hang.close(() => r()));
    }
  });

  it("leaves no abort listener on the view's signal once a query is answered", async () => {
    const api = createConsulClient({ address });
    try {
      reply = { status: 200, body: JSON.stringify([entry]) };
      const ac = new AbortController();
      for (let i = 0; i < 20; i++) await api.healthService({ service: "web" }, { index: 1n, wait: 1000, signal: ac.signal });
      reply = { status: 500, body: "boom" };
      await api.healthService({ service: "web" }, { signal: ac.signal }).catch(() => undefined);
      assert.equal(getEventListeners(ac.signal, "abort").length, 0);
    } finally {
      api.close();
    }
  });

  it("ends a cancelled request with an AbortError", async () => {
    // A server that never answers: the request is in flight until it is cancelled.
    const arrived = deferred();
    const hang = createServer(() => arrived.resolve());
    await new Promise<void>((r) => hang.listen(0, "127.0.0.1", r));
    const api = createConsulClient({ address: `127.0.0.1:${(hang.address() as AddressInfo).port}` });
    try {
      const ac = new AbortController();
      const pending = api.healthService({ service: "web" }, { index: 5n, wait: 60_000, signal: ac.signal }).catch((e: unknown) => e);
      await arrived.promise;
      ac.abort();
      const err = (await pending) as Error;
      assert.equal(err.name, "AbortError");
    } finally {
      api.close();
      hang.closeAllConnections();
      await new Promise<void>((r) => hang.close(() => r()));
    }
  });
});
