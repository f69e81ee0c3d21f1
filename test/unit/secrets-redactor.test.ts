import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { CtsError } from "../../src/errors/cts-error.ts";
import { MIN_SECRET_LENGTH, REDACTED, Redactor } from "../../src/secrets/redactor.ts";
import { redactedError, redactedResult } from "../../src/terraform/redaction.ts";
import { EventStore, makeEvent } from "../../src/runtime/events.ts";

describe("the secret redactor", () => {
  it("replaces every occurrence of a registered value", () => {
    const r = new Redactor();
    r.add("s3cr3t-value");
    assert.equal(r.redact("a s3cr3t-value b s3cr3t-value"), `a ${REDACTED} b ${REDACTED}`);
  });

  it(`ignores values shorter than ${MIN_SECRET_LENGTH} characters, so output is not shredded`, () => {
    const r = new Redactor();
    r.add("");
    r.add("on");
    r.add(undefined);
    assert.equal(r.size, 0);
    assert.equal(r.redact("turn it on"), "turn it on");
  });

  it("replaces a secret that contains another secret whole", () => {
    const r = new Redactor();
    r.add("abcd");
    r.add("xxabcdyy");
    assert.equal(r.redact("k=xxabcdyy"), `k=${REDACTED}`);
  });

  it("also catches the JSON-escaped spelling of a value with quotes", () => {
    const r = new Redactor();
    r.add('pa"ss\\word');
    assert.equal(r.redact(JSON.stringify({ e: 'bad pa"ss\\word' })), `{"e":"bad ${REDACTED}"}`);
  });

  it("scrubs every string of a JSON value, keys included, and keeps the shape", () => {
    const r = new Redactor();
    r.add("topsecret");
    const out = r.redactDeep({ a: ["x topsecret", 3, true, null], topsecret: { m: "topsecret" } });
    assert.deepEqual(out, { a: [`x ${REDACTED}`, 3, true, null], [REDACTED]: { m: REDACTED } });
  });
});

describe("redaction at the Terraform driver's boundary", () => {
  const r = new Redactor();
  r.add("hunter2-secret");
  const redact = (t: string) => r.redact(t);

  it("rewrites a failure's message and detail and keeps its code, category and task", () => {
    const err = new CtsError("TERRAFORM_FAILED", "external", "`tofu apply` failed: key hunter2-secret invalid", { task: "web", detail: { errors: "key hunter2-secret invalid", exitCode: 1 } });
    const out = redactedError(err, redact) as CtsError;
    assert.ok(out instanceof CtsError);
    assert.equal(out.code, "TERRAFORM_FAILED");
    assert.equal(out.category, "external");
    assert.equal(out.task, "web");
    assert.doesNotMatch(out.message, /hunter2/);
    assert.match(out.message, /\[redacted\]/);
    assert.deepEqual(out.detail, { errors: `key ${REDACTED} invalid`, exitCode: 1 });
  });

  it("scrubs a result's plan text", () => {
    const out = redactedResult({ changesPresent: true, summary: { add: 1, change: 0, destroy: 0 }, output: "token = hunter2-secret" }, redact);
    assert.equal(out.output, `token = ${REDACTED}`);
  });

  it("scrubs a result's resource addresses (a for_each key can be a secret)", () => {
    const out = redactedResult({ changesPresent: true, summary: { add: 1, change: 0, destroy: 0 }, output: "", resources: [{ address: 'local_file.f["hunter2-secret"]', action: "create" }] }, redact);
    assert.deepEqual(out.resources, [{ address: `local_file.f["${REDACTED}"]`, action: "create" }]);
  });
});

describe("the event store", () => {
  it("scrubs secrets from events it records and restores", () => {
    const r = new Redactor();
    r.add("event-secret-1");
    const store = new EventStore(5, (e) => r.redactDeep(e));
    store.add(makeEvent("web", new Date(), { success: false, error: { message: "boom event-secret-1" } }));
    store.restore("db", [makeEvent("db", new Date(), { success: false, error: { message: "event-secret-1!" } })]);
    assert.equal(store.list("web")[0]!.error!.message, `boom ${REDACTED}`);
    assert.equal(store.list("db")[0]!.error!.message, `${REDACTED}!`);
  });
});
