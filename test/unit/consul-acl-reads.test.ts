import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createConsulClient } from "../../src/consul/client.ts";
import { CtsError } from "../../src/errors/cts-error.ts";

/**
 * A stand-in for Consul's answers to ACL-limited reads (the real agent's are pinned in
 * test/integration/acl-empty-reads.test.ts): `filtered` answers carry
 * X-Consul-Results-Filtered-By-ACLs; `aclStatus` is what /v1/acl/token/self answers without a token.
 */
describe("reads Consul's ACLs may have emptied", () => {
  let server: Server;
  let address = "";
  let filtered = false;
  let aclStatus = 403;
  let body = "[]";
  const paths: string[] = [];
  before(async () => {
    server = createServer((req, res) => {
      const url = new URL(req.url ?? "/", "http://x");
      paths.push(url.pathname);
      req.resume();
      if (url.pathname === "/v1/acl/token/self") {
        res.writeHead(aclStatus, { "content-type": "text/plain" });
        return res.end(aclStatus === 403 ? "token does not exist: ACL not found" : "ACL support disabled");
      }
      res.writeHead(200, { "content-type": "application/json", "x-consul-index": "9", ...(filtered ? { "x-consul-results-filtered-by-acls": "true" } : {}) });
      res.end(url.pathname === "/v1/catalog/services" && body === "[]" ? "{}" : body);
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    address = `127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => new Promise<void>((r) => server.close(() => r())));
  const denied = (pattern: RegExp) => (err: unknown) => err instanceof CtsError && err.code === "CONSUL_PERMISSION_DENIED" && pattern.test(err.message);

  it("a health answer filtered by ACLs is a permission error naming service:read, not an empty list", async () => {
    filtered = true;
    const client = createConsulClient({ address, token: "t" });
    try {
      await assert.rejects(client.healthService({ service: "web" }), denied(/filtered instances of service "web" by ACLs.*service:read on "web"/));
    } finally {
      client.close();
      filtered = false;
    }
  });

  it("a catalog filtered by ACLs is a permission error, not a shorter catalog", async () => {
    filtered = true;
    const client = createConsulClient({ address, token: "t" });
    try {
      await assert.rejects(client.catalogServices({}), denied(/filtered the catalog's services by ACLs/));
    } finally {
      client.close();
      filtered = false;
    }
  });

  it("without a token, an empty answer from a Consul that enforces ACLs is refused with the fix (set a token)", async () => {
    aclStatus = 403;
    const client = createConsulClient({ address });
    try {
      await assert.rejects(client.healthService({ service: "web" }), denied(/enforces ACLs and cts sends no token.*consul\.token/));
      await assert.rejects(client.catalogServices({}), denied(/enforces ACLs and cts sends no token/));
      assert.equal(paths.filter((p) => p === "/v1/acl/token/self").length, 1, "asked once per client");
    } finally {
      client.close();
    }
  });

  it("without a token and without ACLs, an empty answer is data; with a token it is never second-guessed", async () => {
    aclStatus = 401;
    const plain = createConsulClient({ address });
    const withToken = createConsulClient({ address, token: "t" });
    try {
      assert.deepEqual((await plain.healthService({ service: "web" })).data, []);
      aclStatus = 403;
      const before = paths.length;
      assert.deepEqual((await withToken.healthService({ service: "web" })).data, []);
      assert.deepEqual(paths.slice(before), ["/v1/health/service/web"]);
    } finally {
      plain.close();
      withToken.close();
    }
  });
});
