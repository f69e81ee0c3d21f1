import { describe, it, after } from "node:test";
import assert from "node:assert/strict";
import { createApiServer, type ApiServer } from "../../src/api/server.ts";
import { apiAccessProblems } from "../../src/config/api-access.ts";
import { createLogger } from "../../src/log/logger.ts";
import { createPrometheusMetrics } from "../../src/metrics/prometheus.ts";
import { logFormatOf } from "../../src/cli/run.ts";
import { http } from "../support/api.ts";

const TOKEN = "metrics-test-token-0123456789";

async function serve(opts: { token?: string; metricsRequireToken?: boolean; metrics?: boolean }): Promise<{ server: ApiServer; url: string }> {
  const metrics = createPrometheusMetrics({ defaultMetrics: false });
  metrics.runFinished("web", "applied", 1);
  const server = createApiServer(
    { controller: {} as never, log: createLogger({ level: "error" }), ...(opts.metrics === false ? {} : { metrics: () => metrics.scrape() }) },
    { ...(opts.token ? { token: opts.token } : {}), ...(opts.metricsRequireToken ? { metricsRequireToken: true } : {}) },
  );
  return { server, url: (await server.listen(0, "127.0.0.1")).url };
}

describe("GET /metrics on the API", () => {
  const servers: ApiServer[] = [];
  after(async () => {
    for (const s of servers) await s.close();
  });

  it("is open to reads like the other GET routes, even with an API token, in Prometheus text format", async () => {
    const { server, url } = await serve({ token: TOKEN });
    servers.push(server);
    const res = await http(url, "GET", "/metrics");
    assert.equal(res.status, 200);
    assert.match(String(res.headers["content-type"]), /^text\/plain; version=0\.0\.4/);
    assert.match(res.text, /^cts_task_runs_total\{task="web",outcome="applied"\} 1$/m);
  });

  it("needs the bearer token when api.metricsRequireToken is set: 401 without, 403 wrong, 200 right", async () => {
    const { server, url } = await serve({ token: TOKEN, metricsRequireToken: true });
    servers.push(server);
    assert.equal((await http(url, "GET", "/metrics")).status, 401);
    assert.equal((await http(url, "GET", "/metrics", undefined, { authorization: "Bearer wrong" })).status, 403);
    assert.equal((await http(url, "GET", "/metrics", undefined, { authorization: `Bearer ${TOKEN}` })).status, 200);
    assert.equal((await http(url, "GET", "/v1/health")).status, 200, "other reads stay open");
  });

  it("refuses other methods and query parameters", async () => {
    const { server, url } = await serve({});
    servers.push(server);
    assert.equal((await http(url, "POST", "/metrics", {})).status, 405);
    assert.equal((await http(url, "GET", "/metrics?x=1")).status, 400);
  });

  it("answers 404 where the runtime serves no metrics", async () => {
    const { server, url } = await serve({ metrics: false });
    servers.push(server);
    assert.equal((await http(url, "GET", "/metrics")).status, 404);
  });

  it("validates api.metricsRequireToken", () => {
    assert.deepEqual(apiAccessProblems({ metricsRequireToken: true }), []);
    assert.equal(apiAccessProblems({ metricsRequireToken: "yes" as never })[0]?.field, "api.metricsRequireToken");
  });
});

describe("the log format", () => {
  it("--log-format wins over --log-json and the config; the config's logFormat or log_format comes next; text by default", () => {
    assert.equal(logFormatOf({}), "text");
    assert.equal(logFormatOf({ logJson: true }), "json");
    assert.equal(logFormatOf({ logFormat: "text", logJson: true }, { logFormat: "json" }), "text");
    assert.equal(logFormatOf({ logFormat: "JSON" }), "json");
    assert.equal(logFormatOf({}, { logFormat: "json" }), "json");
    assert.equal(logFormatOf({}, { log_format: "json" }), "json");
  });

  it("refuses an unknown --log-format with a fix", () => {
    assert.throws(() => logFormatOf({ logFormat: "yaml" }), (e: Error & { code?: string }) => e.code === "LOG_FORMAT_INVALID" && /--log-format json/.test(e.message));
  });
});
