import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { CtsError } from "../../src/errors/cts-error.ts";
import { consulEnvForTerraform, resolveConsulConnection } from "../../src/consul/connection.ts";
import { isFatalConsulError, toConsulError } from "../../src/consul/api-error.ts";

describe("resolveConsulConnection", () => {
  it("defaults to http://127.0.0.1:8500 without a token", () => {
    const c = resolveConsulConnection({}, {});
    assert.equal(c.url, "http://127.0.0.1:8500");
    assert.equal(c.address, "127.0.0.1:8500");
    assert.equal(c.token, undefined);
  });

  it("takes host:port, http:// and https:// addresses", () => {
    assert.equal(resolveConsulConnection({ address: "consul:9500" }, {}).url, "http://consul:9500");
    assert.equal(resolveConsulConnection({ address: "https://consul.example:8501" }, {}).scheme, "https");
    assert.equal(resolveConsulConnection({ address: "http://consul" }, {}).port, 8500);
    const v6 = resolveConsulConnection({ address: "[::1]:8500" }, {});
    assert.equal(v6.host, "::1");
    assert.equal(v6.address, "[::1]:8500");
  });

  it("falls back to CONSUL_HTTP_ADDR, CONSUL_HTTP_TOKEN, then CONSUL_TOKEN", () => {
    const env = { CONSUL_HTTP_ADDR: "10.1.1.1:8500", CONSUL_TOKEN: "legacy" };
    assert.equal(resolveConsulConnection({}, env).url, "http://10.1.1.1:8500");
    assert.equal(resolveConsulConnection({}, env).token, "legacy");
    assert.equal(resolveConsulConnection({}, { ...env, CONSUL_HTTP_TOKEN: "new" }).token, "new");
    assert.equal(resolveConsulConnection({ token: "cfg" }, { ...env, CONSUL_HTTP_TOKEN: "new" }).token, "cfg");
  });

  it("switches to https with CONSUL_HTTP_SSL or tls.enabled, and reads the TLS env variables", () => {
    const c = resolveConsulConnection(
      {},
      {
        CONSUL_HTTP_ADDR: "consul:8501",
        CONSUL_HTTP_SSL: "true",
        CONSUL_CACERT: "/ca.pem",
        CONSUL_CLIENT_CERT: "/c.pem",
        CONSUL_CLIENT_KEY: "/k.pem",
        CONSUL_TLS_SERVER_NAME: "server.dc1.consul",
      },
    );
    assert.equal(c.url, "https://consul:8501");
    assert.deepEqual(c.tls, { caFile: "/ca.pem", certFile: "/c.pem", keyFile: "/k.pem", serverName: "server.dc1.consul" });
    assert.equal(resolveConsulConnection({ address: "consul:8501", tls: { enabled: true } }, {}).scheme, "https");
    // Certificate files alone do not switch the scheme (as Consul's own clients).
    assert.equal(resolveConsulConnection({ address: "consul:8500", tls: { caFile: "/ca.pem" } }, {}).scheme, "http");
  });

  it("rejects other schemes, paths, and half a client certificate, naming what to fix", () => {
    assert.throws(() => resolveConsulConnection({ address: "unix:///tmp/consul.sock" }, {}), (e: unknown) => e instanceof CtsError && /consul\.address/.test(e.message) && e.category === "usage");
    assert.throws(() => resolveConsulConnection({ address: "consul:8500/v1" }, {}), /just a host and port/);
    assert.throws(() => resolveConsulConnection({ tls: { certFile: "/c.pem" } }, {}), /certFile and consul\.tls\.keyFile/);
    assert.throws(() => resolveConsulConnection({ address: "http://x:1", tls: { enabled: true } }, {}), /https/);
  });
});

describe("consulEnvForTerraform", () => {
  it("passes the address, token and TLS files to Terraform through the environment", () => {
    const c = resolveConsulConnection({ address: "https://consul:8501", token: "s3cret", tls: { caFile: "/ca.pem", insecureSkipVerify: true } }, {});
    assert.deepEqual(consulEnvForTerraform(c), {
      CONSUL_HTTP_ADDR: "https://consul:8501",
      CONSUL_HTTP_TOKEN: "s3cret",
      CONSUL_HTTP_SSL: "true",
      CONSUL_CACERT: "/ca.pem",
      CONSUL_HTTP_SSL_VERIFY: "false",
    });
  });

  it("sets only the address for a plain agent", () => {
    assert.deepEqual(consulEnvForTerraform(resolveConsulConnection({}, {})), { CONSUL_HTTP_ADDR: "http://127.0.0.1:8500" });
  });
});

describe("toConsulError", () => {
  const call = { what: "reading the health of service 'web'", permission: 'service:read on "web"', url: "http://127.0.0.1:8500" };
  it("names the missing permission on 403 and keeps the status", () => {
    const err = toConsulError({ response: { statusCode: 403, body: "Permission denied" } }, call);
    assert.equal(err.code, "CONSUL_PERMISSION_DENIED");
    assert.equal(err.detail.status, 403);
    assert.match(err.message, /service:read on "web"/);
    assert.match(err.message, /Permission denied/);
  });

  it("explains an unreachable agent with the address to check", () => {
    const err = toConsulError(Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" }), call);
    assert.equal(err.code, "CONSUL_UNREACHABLE");
    assert.match(err.message, /127\.0\.0\.1:8500.*ECONNREFUSED.*CONSUL_HTTP_ADDR/);
    assert.equal(err.detail.status, undefined);
  });

  it("marks a bad filter as a fatal usage error, though Consul answers it with a 500", () => {
    const err = toConsulError({ response: { statusCode: 500, body: "Failed to create boolean expression evaluator: 1:9 (8): no match found" } }, call);
    assert.equal(err.code, "CONSUL_BAD_REQUEST");
    assert.equal(err.category, "usage");
    assert.equal(err.detail.status, 500);
    assert.match(err.message, /filter/);
    assert.equal(isFatalConsulError(err), true);
  });

  it("treats 4xx other than 429 as fatal, and 429 and 5xx as retryable", () => {
    const status = (s: number) => isFatalConsulError(toConsulError({ response: { statusCode: s, body: "x" } }, call));
    assert.deepEqual([403, 404, 429, 500, 503].map(status), [true, true, false, false, false]);
  });
});
