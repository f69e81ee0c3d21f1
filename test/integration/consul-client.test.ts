import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { startConsul, type ConsulAgent } from "../support/consul.ts";
import { freePort } from "../support/ports.ts";
import { resolveConsulConnection } from "../../src/consul/connection.ts";
import { createConsulClient, type ConsulClient } from "../../src/consul/client.ts";
import { isAbortError } from "../../src/consul/api-error.ts";
import { HaKv } from "../../src/ha/kv.ts";
import { consulProblem, registerSelf } from "../../src/daemon/registration.ts";
import { createLogger } from "../../src/log/logger.ts";
import { CtsError } from "../../src/errors/cts-error.ts";

const ACL = `acl {\n  enabled = true\n  default_policy = "deny"\n  tokens { initial_management = "root-token-for-tests" }\n}\n`;

describe("the one Consul client on a real agent", () => {
  let consul: ConsulAgent;
  let client: ConsulClient;
  let kv: HaKv;

  before(async () => {
    consul = await startConsul({ extraConfig: ACL, headers: { "x-consul-token": "root-token-for-tests" } });
    client = createConsulClient(resolveConsulConnection({ address: consul.address, token: "root-token-for-tests" }, {}));
    kv = new HaKv(client);
  });

  after(async () => {
    client?.close();
    await consul?.stop();
  });

  it("answers a blocking KV read when the key changes, with a higher index", async () => {
    await kv.put("client-test/a", "1");
    const first = await kv.get("client-test/a");
    assert.equal(first.data?.value, "1");
    const blocked = kv.get("client-test/a", { index: first.index });
    await kv.put("client-test/a", "2");
    const next = await blocked;
    assert.equal(next.data?.value, "2");
    assert.ok(next.index > first.index);
  });

  it("ends a cancelled blocking query with an AbortError", async () => {
    const { index } = await kv.get("client-test/a");
    const ac = new AbortController();
    const blocked = kv.get("client-test/a", { index, signal: ac.signal });
    ac.abort();
    await assert.rejects(blocked, (err: unknown) => isAbortError(err));
  });

  it("creates sessions tied to no health check, and a transaction fenced by one fails when the session lost the lock", async () => {
    const session = await kv.createSession("cts-client-test", 10_000, 0);
    const info = (await consul.api("GET", `/v1/session/info/${session}`)) as Array<{ NodeChecks: string[] | null; ServiceChecks: unknown[] | null; TTL: string }>;
    assert.deepEqual(info[0]!.NodeChecks ?? [], []);
    assert.equal(info[0]!.TTL, "10s");
    assert.equal(await kv.acquire("client-test/lock", session, "me"), true);
    assert.equal(await kv.txn([{ verb: "check-session", key: "client-test/lock", session }, { verb: "set", key: "client-test/state", value: "x" }]), true);
    assert.equal((await kv.get("client-test/state")).data?.value, "x");
    assert.equal(await kv.release("client-test/lock", session), true);
    assert.equal(await kv.txn([{ verb: "check-session", key: "client-test/lock", session }, { verb: "set", key: "client-test/state", value: "y" }]), false);
    assert.equal((await kv.get("client-test/state")).data?.value, "x", "a failed transaction wrote nothing");
    assert.equal(await kv.renewSession(session, 5_000), "ok");
    await kv.destroySession(session);
    assert.equal(await kv.renewSession(session, 5_000), "gone");
  });

  it("keeps HA's error codes, naming the permission the token lacks", async () => {
    const weak = createConsulClient(resolveConsulConnection({ address: consul.address, token: "not-a-token-0000" }, {}));
    try {
      await assert.rejects(new HaKv(weak).put("client-test/x", "1"), (err: unknown) => err instanceof CtsError && err.code === "HA_CONSUL_FAILED" && err.detail.status === 403 && /key:write/.test(err.message));
    } finally {
      weak.close();
    }
  });

  it("uses a rotated token from the next call on: package calls, raw reads and Terraform's environment", async () => {
    const api = createConsulClient(resolveConsulConnection({ address: consul.address, token: "not-a-token-0000" }, {}));
    try {
      await assert.rejects(api.kv({ path: "client-test/a" }), (err: unknown) => err instanceof CtsError && err.code === "CONSUL_PERMISSION_DENIED" && /key:read on "client-test\/a"/.test(err.message));
      await assert.rejects(api.healthService({ service: "consul" }), (err: unknown) => err instanceof CtsError && err.detail.status === 403);
      api.rotateToken("root-token-for-tests");
      const { data } = await api.kv({ path: "client-test/a" });
      assert.deepEqual(data, [{ Key: "client-test/a", Value: "2" }]);
      assert.equal((await api.healthService({ service: "consul" })).data.length, 1);
      await new HaKv(api).put("client-test/rotated", "yes");
      assert.equal(api.terraformEnv.CONSUL_HTTP_TOKEN, "root-token-for-tests");
    } finally {
      api.close();
    }
  });

  it("registers itself with the agent, deregisters, and reports the leader", async () => {
    const reg = await registerSelf(client, { id: "cts-client-test", address: "127.0.0.1", port: 1, log: createLogger({ write: () => {} }) });
    assert.equal(reg.registered, true);
    const services = (await consul.api("GET", "/v1/agent/services")) as Record<string, { Service: string; Tags: string[] }>;
    assert.deepEqual(services["cts-client-test"] && { name: services["cts-client-test"].Service, tags: services["cts-client-test"].Tags }, { name: "consul-terraform-sync", tags: ["cts"] });
    await reg.deregister();
    assert.equal(((await consul.api("GET", "/v1/agent/services")) as Record<string, unknown>)["cts-client-test"], undefined);
    assert.equal(await consulProblem(client), undefined);
    const nowhere = createConsulClient(resolveConsulConnection({ address: `127.0.0.1:${await freePort()}` }, {}));
    try {
      assert.match((await consulProblem(nowhere)) ?? "", /unreachable/);
    } finally {
      nowhere.close();
    }
  });
});
