import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { startConsul, type ConsulAgent } from "../support/consul.ts";
import { startCountingProxy, type CountingProxy } from "../support/counting-proxy.ts";
import { createConsulClient, type ConsulApi } from "../../src/consul/client.ts";
import { createCatalogReader, createWatcher, type ConsulWatcher } from "../../src/watch/watcher.ts";
import type { CtsError } from "../../src/errors/cts-error.ts";
import type { ServiceInstance } from "../../src/consul/types.ts";

/** Short waits so blocking queries cycle quickly and recovery after a restart is fast. */
const timing = { waitMs: 2_000, backoffBaseMs: 50, backoffMaxMs: 500, fatalRetryMs: 500 };

async function until(cond: () => boolean, ms: number, what: string): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

function listener() {
  const l = { changes: 0, errors: [] as { error: CtsError; fatal: boolean }[], onChange: () => l.changes++, onError: (error: CtsError, fatal: boolean) => l.errors.push({ error, fatal }) };
  return l;
}

const ids = (list: ServiceInstance[] | undefined) => (list ?? []).map((i) => i.id).sort();

describe("watching a real Consul", () => {
  let consul: ConsulAgent;
  let proxy: CountingProxy;
  let api: ConsulApi;
  let watcher: ConsulWatcher;

  before(async () => {
    consul = await startConsul();
    proxy = await startCountingProxy(consul.url);
    api = createConsulClient({ address: proxy.address });
    watcher = createWatcher(api, { timing });
  });

  after(async () => {
    watcher?.close();
    api?.close();
    await proxy?.stop();
    await consul?.stop();
  });

  it("delivers a subscription's first data in CTS's shape", async () => {
    await consul.register({ ID: "web-1", Name: "web", Port: 8080, Tags: ["zeta", "alpha"], Meta: { version: "1" } });
    const sub = watcher.subscribe({ kind: "services", query: { names: ["web"], userMeta: { team: "ops" } } }, listener());
    await sub.ready;
    const [web] = sub.current()!;
    assert.equal(web!.id, "web-1");
    assert.equal(web!.name, "web");
    assert.equal(web!.port, 8080);
    assert.deepEqual(web!.tags, ["alpha", "zeta"]);
    assert.deepEqual(web!.meta, { version: "1" });
    assert.equal(web!.address, "127.0.0.1", "falls back to the node address");
    assert.equal(web!.nodeAddress, "127.0.0.1");
    assert.equal(web!.node, "cts-test");
    assert.equal(web!.nodeDatacenter, "dc1");
    assert.equal(web!.status, "passing");
    assert.deepEqual(web!.ctsUserDefinedMeta, { team: "ops" });
    sub.close();
  });

  it("fires onChange with 2 instances when a second instance registers, and not before", async () => {
    await consul.register({ ID: "api-1", Name: "api", Port: 1 });
    const l = listener();
    const sub = watcher.subscribe({ kind: "services", query: { names: ["api"] } }, l);
    await sub.ready;
    // Another service's change wakes nothing up for this subscriber. It is checked after a later
    // change that does: a notice for the first would have come before the second's.
    await consul.register({ ID: "unrelated-1", Name: "unrelated", Port: 1 });
    assert.deepEqual(ids(sub.current()), ["api-1"]);

    await consul.register({ ID: "api-2", Name: "api", Port: 2 });
    await until(() => ids(sub.current()).includes("api-2"), 20_000, "the second registration to arrive");
    assert.equal(l.changes, 1, "one onChange: the second registration's, none for the unrelated one");
    assert.deepEqual(ids(sub.current()), ["api-1", "api-2"]);
    sub.close();
  });

  it("drops an instance from a passing-only subscription when its check fails or it deregisters", async () => {
    await consul.register({ ID: "cache-1", Name: "cache", Port: 1, Check: { CheckID: "cache-1-ttl", TTL: "60s", Status: "passing" } });
    await consul.register({ ID: "cache-2", Name: "cache", Port: 2, Check: { CheckID: "cache-2-ttl", TTL: "60s", Status: "passing" } });
    await consul.register({ ID: "cache-3", Name: "cache", Port: 3 });
    const l = listener();
    const sub = watcher.subscribe({ kind: "services", query: { names: ["cache"] } }, l);
    const all = watcher.subscribe({ kind: "services", query: { names: ["cache"], passingOnly: false } }, listener());
    await Promise.all([sub.ready, all.ready]);
    assert.deepEqual(ids(sub.current()), ["cache-1", "cache-2", "cache-3"]);

    await consul.api("PUT", "/v1/agent/check/fail/cache-1-ttl");
    await until(() => l.changes >= 1 && ids(sub.current()).join() === "cache-2,cache-3", 20_000, "cache-1 to drop out");
    await until(() => all.current()!.find((i) => i.id === "cache-1")?.status === "critical", 20_000, "cache-1 critical in the unfiltered view");

    await consul.deregister("cache-3");
    await until(() => ids(sub.current()).join() === "cache-2", 20_000, "cache-3 to drop out");
    sub.close();
    all.close();
  });

  // That no 10 s sleep comes first (CTS's) is shown on a fake clock: test/unit/watch-watcher.test.ts.
  it("picks up a NEW service matching a regexp", async () => {
    await consul.register({ ID: "queue-a-1", Name: "queue-a", Port: 1 });
    const l = listener();
    const sub = watcher.subscribe({ kind: "services", query: { regexp: "^queue-" } }, l);
    await sub.ready;
    assert.deepEqual(ids(sub.current()), ["queue-a-1"]);

    await consul.register({ ID: "queue-b-1", Name: "queue-b", Port: 1 });
    await until(() => ids(sub.current()).includes("queue-b-1"), 20_000, "queue-b to be picked up");
    assert.equal(l.changes, 1);
    sub.close();
  });

  it("notifies catalog-services subscribers when a name appears, not when tags change", async () => {
    await consul.register({ ID: "tagged-1", Name: "tagged", Port: 1, Tags: ["v1"] });
    const l = listener();
    const sub = watcher.subscribe({ kind: "catalog-services", query: { regexp: "^tagged" } }, l);
    await sub.ready;
    assert.deepEqual(sub.current(), { tagged: ["v1"] });
    await consul.register({ ID: "tagged-1", Name: "tagged", Port: 1, Tags: ["v2"] });
    await until(() => sub.current()?.tagged?.[0] === "v2", 20_000, "the new tags to be read");
    assert.equal(l.changes, 0);
    await consul.register({ ID: "tagged-two-1", Name: "tagged-two", Port: 1 });
    await until(() => l.changes === 1, 20_000, "a new name to notify");
    sub.close();
  });

  it("watches a KV key from missing to set, decoding UTF-8", async () => {
    const l = listener();
    const sub = watcher.subscribe({ kind: "consul-kv", query: { path: "cts-test/greeting" } }, l);
    await sub.ready;
    assert.deepEqual(sub.current(), {});
    await consul.api("PUT", "/v1/kv/cts-test/greeting", "héllo ${x}");
    await until(() => l.changes === 1, 20_000, "the KV change");
    assert.deepEqual(sub.current(), { "cts-test/greeting": "héllo ${x}" });
    const read = await createCatalogReader(api).read({ kind: "consul-kv", query: { path: "cts-test/", recurse: true } });
    assert.deepEqual(read, { "cts-test/greeting": "héllo ${x}" });
    sub.close();
  });

  it("rejects ready with a usage error for a filter Consul cannot parse", async () => {
    const l = listener();
    const sub = watcher.subscribe({ kind: "services", query: { names: ["web"], filter: "Service.Tags contains" } }, l);
    await assert.rejects(sub.ready, (e: CtsError) => e.code === "CONSUL_BAD_REQUEST" && e.category === "usage" && /filter/.test(e.message));
    assert.equal(l.errors[0]?.fatal, true);
    sub.close();
  });

  it("sends one stream of requests to the agent for two subscribers on the same service", async (t) => {
    await consul.register({ ID: "shared-1", Name: "shared", Port: 1 });
    const path = "/v1/health/service/shared";
    const a = listener();
    const b = listener();
    // A wait longer than the test: every request counted below is the loop's, none a wait running out.
    const patient = createWatcher(api, { timing: { ...timing, waitMs: 300_000 } });
    t.after(() => patient.close());
    const subA = patient.subscribe({ kind: "services", query: { names: ["shared"] } }, a);
    const subB = patient.subscribe({ kind: "services", query: { names: ["shared"] } }, b);
    await Promise.all([subA.ready, subB.ready]);
    await until(() => proxy.inFlight(path) === 1, 20_000, "the blocking query to be in flight");
    await consul.register({ ID: "shared-2", Name: "shared", Port: 2 });
    await until(() => a.changes === 1 && b.changes === 1, 20_000, "both subscribers to hear of shared-2");
    await until(() => proxy.inFlight(path) === 1, 20_000, "the next blocking query");
    assert.equal(proxy.maxInFlight(path), 1, "never two queries at once: one view, not two");
    // First read, blocking read answered by shared-2, next blocking read: one loop's worth.
    assert.ok(proxy.total(path) <= 4, `one view's requests, got ${proxy.total(path)}`);
    assert.ok(proxy.requests().some((r) => r.path === path && /index=\d+/.test(r.query) && /wait=300000ms/.test(r.query)), "blocking queries go through the proxy");
    subA.close();
    subB.close();
    await until(() => proxy.inFlight(path) === 0, 20_000, "the view's query to be cancelled once both left");
  });

  it("checks each blocking health wait that runs out with one full read (index 0), and hears no change when there is none", async (t) => {
    await consul.register({ ID: "quiet-1", Name: "quiet", Port: 1 });
    const path = "/v1/health/service/quiet";
    const l = listener();
    const warnings: string[] = [];
    const brisk = createWatcher(api, { timing: { ...timing, waitMs: 500 }, warn: (m) => warnings.push(m) });
    t.after(() => brisk.close());
    const sub = brisk.subscribe({ kind: "services", query: { names: ["quiet"] } }, l);
    await sub.ready;
    const reads = (blocking: boolean) => proxy.requests().filter((r) => r.path === path && /index=\d+/.test(r.query) === blocking).length;
    await until(() => reads(true) >= 4, 20_000, "three waits to run out");
    assert.ok(reads(false) >= 3, `a full read after each wait that ran out, got ${reads(false)} full and ${reads(true)} blocking reads`);
    assert.equal(l.changes, 0, "the full reads found nothing new");
    assert.deepEqual(warnings, []);
    assert.deepEqual(ids(sub.current()), ["quiet-1"]);
    await consul.register({ ID: "quiet-2", Name: "quiet", Port: 2 });
    await until(() => l.changes === 1, 20_000, "the next registration");
    assert.deepEqual(ids(sub.current()), ["quiet-1", "quiet-2"]);
    sub.close();
  });

  it("survives a Consul restart (index reset) and notifies the next registration", async () => {
    await consul.register({ ID: "phoenix-1", Name: "phoenix", Port: 1 });
    const l = listener();
    const sub = watcher.subscribe({ kind: "services", query: { names: ["phoenix"] } }, l);
    await sub.ready;
    assert.deepEqual(ids(sub.current()), ["phoenix-1"]);

    await consul.restart();
    // A dev agent forgets its catalog: the view re-reads from index 0 and sees phoenix gone.
    await until(() => ids(sub.current()).length === 0, 20_000, "the restarted agent's empty catalog");
    const changesAfterRestart = l.changes;
    await consul.register({ ID: "phoenix-2", Name: "phoenix", Port: 2 });
    await until(() => ids(sub.current()).join() === "phoenix-2", 20_000, "the registration after the restart");
    assert.equal(l.changes, changesAfterRestart + 1);
    // Whether the outage surfaced as an error depends on timing (a quick restart can fall between
    // two requests); when it did, it must have been retryable.
    assert.ok(l.errors.every((e) => !e.fatal), "the outage was reported as retryable");
    sub.close();
  });
});

describe("Consul ACL errors", () => {
  let consul: ConsulAgent;
  before(async () => {
    consul = await startConsul({
      extraConfig: `acl {\n  enabled = true\n  default_policy = "deny"\n  tokens {\n    initial_management = "root-secret"\n  }\n}\n`,
      headers: { "X-Consul-Token": "root-secret" },
    });
  });
  after(async () => {
    await consul?.stop();
  });

  it("reports a 403 on a KV read as fatal, naming key:read on the path and never the token", async () => {
    const token = (await consul.api("PUT", "/v1/acl/token", { Description: "no rights" })) as { SecretID: string };
    const api = createConsulClient({ address: consul.address, token: token.SecretID });
    const watcher = createWatcher(api, { timing });
    try {
      const l = listener();
      const sub = watcher.subscribe({ kind: "consul-kv", query: { path: "secret/db" } }, l);
      const err = (await sub.ready.then(
        () => assert.fail("ready should reject"),
        (e: unknown) => e,
      )) as CtsError;
      assert.equal(err.code, "CONSUL_PERMISSION_DENIED");
      assert.equal(err.detail.status, 403);
      assert.match(err.message, /key:read on "secret\/db"/);
      assert.ok(!err.message.includes(token.SecretID) && !JSON.stringify(err.detail).includes(token.SecretID), "the token stays secret");
      assert.equal(l.errors[0]?.fatal, true);
    } finally {
      watcher.close();
      api.close();
    }
  });
});
