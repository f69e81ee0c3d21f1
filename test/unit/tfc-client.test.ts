import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { answerError, networkError } from "../../src/tfc/errors.ts";
import { summarizePlanJson } from "../../src/tfc/plan-summary.ts";
import { backoffMs, DEFAULT_RETRY, rateLimitWaitMs } from "../../src/tfc/retry.ts";
import { knownSecrets } from "../../src/secrets/redactor.ts";
import { hclString, tfvarsFile } from "../support/tfc-server/executor/tfvars.ts";

const CALL = { method: "GET", path: "/api/v2/organizations/acme" };

describe("TFC client: errors by status class", () => {
  it("maps each status class to its catalogued code, whatever the body says", () => {
    const cases: [number, string][] = [
      [401, "TFC_UNAUTHORIZED"],
      [403, "TFC_FORBIDDEN"],
      [404, "TFC_NOT_FOUND"],
      [409, "TFC_CONFLICT"],
      [400, "TFC_INVALID"],
      [422, "TFC_INVALID"],
      [418, "TFC_INVALID"],
      [429, "TFC_RATE_LIMITED"],
      [500, "TFC_SERVER_ERROR"],
      [503, "TFC_SERVER_ERROR"],
      [302, "TFC_BAD_ANSWER"],
    ];
    for (const [status, code] of cases) {
      for (const [body, type] of [['{"errors":[{"status":"x","title":"conflict"}]}', "application/vnd.api+json"], ["unauthorized", "text/plain"], ["", undefined]] as const) {
        assert.equal(answerError(status, body, type, CALL).code, code, `${status} with ${type}`);
      }
    }
  });

  it("shows JSON:API titles and details, says so for empty and HTML bodies, and clips long text", () => {
    assert.match(answerError(422, '{"errors":[{"title":"invalid attribute","detail":"Name has already been taken"}]}', "application/vnd.api+json", CALL).message, /answered 422 to GET \/api\/v2\/organizations\/acme: invalid attribute: Name has already been taken\./);
    assert.match(answerError(409, "", undefined, CALL).message, /\(no body\)/);
    assert.match(answerError(502, "<html><body>Bad Gateway</body></html>", "text/html", CALL).message, /an HTML page/);
    assert.ok(answerError(500, "x".repeat(5000), "text/plain", CALL).message.length < 700);
  });

  it("never repeats a registered token found in a body", () => {
    const token = "unit-test-token-4242.atlasv1.secret";
    knownSecrets.add(token);
    const err = answerError(401, `{"errors":[{"title":"unauthorized","detail":"bad token ${token}"}]}`, "application/vnd.api+json", CALL);
    assert.ok(!err.message.includes(token));
    assert.match(err.message, /\[redacted\]/);
  });

  it("tells TLS failures from unreachable servers", () => {
    const tls = Object.assign(new Error("unable to verify the first certificate"), { code: "UNABLE_TO_VERIFY_LEAF_SIGNATURE" });
    assert.equal(networkError(tls, CALL, "tfe.example.com").code, "TFC_TLS_FAILED");
    assert.equal(networkError(Object.assign(new Error("Hostname/IP does not match"), { code: "ERR_TLS_CERT_ALTNAME_INVALID" }), CALL, "h").code, "TFC_TLS_FAILED");
    assert.equal(networkError(Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" }), CALL, "h").code, "TFC_UNREACHABLE");
  });
});

describe("TFC client: retry waits", () => {
  it("reads X-RateLimit-Reset as seconds (a float), a Unix time as a time, then Retry-After", () => {
    assert.equal(rateLimitWaitMs(DEFAULT_RETRY, 1, { "x-ratelimit-reset": "0.250" }, 1_700_000_000_000), 250);
    assert.equal(rateLimitWaitMs(DEFAULT_RETRY, 1, { "x-ratelimit-reset": "1700000002" }, 1_700_000_000_000), 2000);
    assert.equal(rateLimitWaitMs(DEFAULT_RETRY, 1, { "retry-after": "3" }, 1_700_000_000_000), 3000);
  });

  it("caps what a 429 may ask for, and backs off when it asks nothing", () => {
    assert.equal(rateLimitWaitMs(DEFAULT_RETRY, 1, { "x-ratelimit-reset": "3600" }, 1_700_000_000_000), DEFAULT_RETRY.maxRateLimitWaitMs);
    const fallback = rateLimitWaitMs(DEFAULT_RETRY, 1, {}, 1_700_000_000_000);
    assert.ok(fallback >= 125 && fallback <= 250, String(fallback));
  });

  it("doubles the backoff per attempt up to the cap, with jitter in the upper half", () => {
    const low = () => 0;
    const high = () => 1;
    assert.deepEqual([1, 2, 3].map((n) => backoffMs(DEFAULT_RETRY, n, high)), [250, 500, 1000]);
    assert.deepEqual([1, 2, 3].map((n) => backoffMs(DEFAULT_RETRY, n, low)), [125, 250, 500]);
    assert.equal(backoffMs(DEFAULT_RETRY, 30, high), DEFAULT_RETRY.maxDelayMs);
  });
});

describe("TFC client: changes from a plan's JSON", () => {
  it("counts creates, updates, deletes and replacements; output changes count as changes", () => {
    const plan = {
      resource_changes: [
        { change: { actions: ["create"] } },
        { change: { actions: ["update"] } },
        { change: { actions: ["delete", "create"] } },
        { change: { actions: ["no-op"] } },
        { change: { actions: ["read"] } },
      ],
    };
    assert.deepEqual(summarizePlanJson(plan), { changesPresent: true, summary: { add: 2, change: 1, destroy: 1 } });
    assert.deepEqual(summarizePlanJson({ resource_changes: [{ change: { actions: ["no-op"] } }] }).changesPresent, false);
    assert.equal(summarizePlanJson({ output_changes: { url: { actions: ["update"] } } }).changesPresent, true);
  });
});

describe("the TFC test server's terraform.tfvars", () => {
  it("quotes strings so Terraform never evaluates them, writes HCL values as they are, run variables last", () => {
    assert.equal(hclString('a "b" ${c} %{d} \\ \n\u0001'), '"a \\"b\\" $${c} %%{d} \\\\ \\n\\u0001"');
    assert.equal(tfvarsFile([{ key: "m", value: '{ a = 1 }', hcl: true }, { key: "s", value: "x", hcl: false }, { key: "s", value: '"y"', hcl: true }]), 'm = { a = 1 }\ns = "y"\n');
  });
});
