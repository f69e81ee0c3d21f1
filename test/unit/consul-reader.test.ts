import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { ConsulApi, HealthEntry, HealthServiceRequest } from "../../src/consul/client.ts";
import { createCatalogReader } from "../../src/consul/reader.ts";
import { isRefusedServiceName, refusedServiceName } from "../../src/consul/api-error.ts";
import { CtsError } from "../../src/errors/cts-error.ts";

function entry(name: string, id: string, node: string): HealthEntry {
  return { Node: { Node: node, Address: "10.0.0.1" }, Service: { ID: id, Service: name, Port: 1 }, Checks: [] };
}

/** A non-blocking fake that records the requests it gets. */
function fakeApi() {
  const health: HealthServiceRequest[] = [];
  const catalog: unknown[] = [];
  const kv: unknown[] = [];
  const data: Record<string, HealthEntry[]> = {
    web: [entry("web", "w2", "n1"), entry("web", "w1", "n2")],
    "web-admin": [entry("web-admin", "a1", "n1")],
    db: [entry("db", "d1", "n0")],
  };
  const api: ConsulApi = {
    async healthService(req) {
      health.push(req);
      return { data: data[req.service] ?? [], index: 5n };
    },
    async catalogServices(req) {
      catalog.push(req);
      return { data: { web: ["b", "a"], "web-admin": null, db: [] }, index: 5n };
    },
    async kv(req) {
      kv.push(req);
      return { data: req.recurse ? [{ Key: "cfg/b", Value: "2" }, { Key: "cfg/a", Value: "1" }] : [], index: 5n };
    },
    catalogNodes: async () => ({ data: [], index: 5n }),
    intentions: async () => ({ data: [], index: 5n }),
    configEntries: async () => ({ data: [], index: 5n }),
    close() {},
  };
  return { api, health, catalog, kv };
}

describe("createCatalogReader", () => {
  it("reads the union of several names' instances, sorted by node then id, passing-only by default", async () => {
    const f = fakeApi();
    const list = await createCatalogReader(f.api).read({ kind: "services", query: { names: ["web", "db"], userMeta: { k: "v" }, datacenter: "dc2" } });
    assert.deepEqual(
      list.map((i) => `${i.node}/${i.id}`),
      ["n0/d1", "n1/w2", "n2/w1"],
    );
    assert.ok(list.every((i) => i.ctsUserDefinedMeta.k === "v"));
    assert.deepEqual(
      f.health.map((r) => [r.service, r.passing, r.datacenter]),
      [
        ["db", true, "dc2"],
        ["web", true, "dc2"],
      ],
    );
  });

  it("reads each entry of a per-service query with its own datacenter, namespace, filter and user metadata (CTS's service blocks)", async () => {
    const f = fakeApi();
    const list = await createCatalogReader(f.api).read({
      kind: "services",
      query: { names: ["web", "db"], datacenter: "unused", each: [{ name: "web", datacenter: "dc2", userMeta: { k: "web" } }, { name: "web", datacenter: "dc3", filter: "Checks.Status == \"passing\"" }, { name: "db", namespace: "team", userMeta: { k: "db" } }] },
    });
    assert.deepEqual(
      f.health.map((r) => [r.service, r.datacenter ?? "", r.namespace ?? "", r.filter ?? "", r.passing]),
      [
        ["web", "dc2", "", "", true],
        ["web", "dc3", "", 'Checks.Status == "passing"', false],
        ["db", "", "team", "", true],
      ],
    );
    assert.deepEqual(
      list.map((i) => `${i.node}/${i.id}:${i.ctsUserDefinedMeta.k ?? "-"}`),
      ["n0/d1:db", "n1/w2:web", "n1/w2:-", "n2/w1:web", "n2/w1:-"],
    );
  });

  it("reads a regexp as catalog services, then health for each matching name", async () => {
    const f = fakeApi();
    const list = await createCatalogReader(f.api).read({ kind: "services", query: { regexp: "^web", namespace: "team" } });
    assert.deepEqual(f.catalog, [{ namespace: "team" }]);
    assert.deepEqual(
      f.health.map((r) => r.service),
      ["web", "web-admin"],
    );
    assert.equal(list.length, 3);
  });

  it("drops passing when the filter mentions Checks.Status, and honours passingOnly: false", async () => {
    const f = fakeApi();
    const reader = createCatalogReader(f.api);
    await reader.read({ kind: "services", query: { names: ["web"], filter: 'Checks.Status == "warning"' } });
    await reader.read({ kind: "services", query: { names: ["web"], passingOnly: false } });
    assert.deepEqual(
      f.health.map((r) => [r.passing, r.filter]),
      [
        [false, 'Checks.Status == "warning"'],
        [false, undefined],
      ],
    );
  });

  it("reads catalog services filtered by regexp, tags sorted, with node-meta passed on", async () => {
    const f = fakeApi();
    const out = await createCatalogReader(f.api).read({ kind: "catalog-services", query: { regexp: "web", nodeMeta: { rack: "a" } } });
    assert.deepEqual(out, { web: ["a", "b"], "web-admin": [] });
    assert.deepEqual(f.catalog, [{ nodeMeta: { rack: "a" } }]);
    assert.deepEqual(Object.keys(await createCatalogReader(f.api).read({ kind: "catalog-services", query: { regexp: "" } })), ["db", "web", "web-admin"]);
  });

  it("reads a KV prefix as sorted key → value, and a missing key as {}", async () => {
    const f = fakeApi();
    const reader = createCatalogReader(f.api);
    assert.deepEqual(await reader.read({ kind: "consul-kv", query: { path: "/cfg/", recurse: true } }), { "cfg/a": "1", "cfg/b": "2" });
    assert.deepEqual(await reader.read({ kind: "consul-kv", query: { path: "missing" } }), {});
    assert.deepEqual(f.kv[0], { path: "cfg/", recurse: true });
  });

  describe("a service Consul cannot serve", () => {
    const ODD = ["odd\nline", "odd\u0000nul", "odd\ttab"];
    /** Consul as it is: the catalog lists the odd names, their health reads fail as the client reports them. */
    function oddApi(healthError: (service: string) => unknown = (service) => refusedServiceName(emptyBadRequest(), service)) {
      const f = fakeApi();
      const api: ConsulApi = {
        ...f.api,
        healthService: (req, opts) => (ODD.includes(req.service) ? Promise.reject(healthError(req.service)) : f.api.healthService(req, opts)),
        catalogServices: async () => ({ data: { web: [], [ODD[0]!]: [], [ODD[1]!]: [], [ODD[2]!]: [] }, index: 5n }),
      };
      return api;
    }
    const emptyBadRequest = () => new CtsError("CONSUL_BAD_REQUEST", "usage", "Consul rejected it (HTTP 400).", { detail: { status: 400 } });

    it("is left out of a regexp's data and told, the other services read", async () => {
      const skipped: string[] = [];
      const list = await createCatalogReader(oddApi()).read({ kind: "services", query: { regexp: "" } }, undefined, (service, err) => {
        assert.equal(isRefusedServiceName(err), true);
        skipped.push(service);
      });
      assert.deepEqual(list.map((i) => i.id), ["w2", "w1"]);
      assert.deepEqual(skipped.sort(), [...ODD].sort());
    });

    it("is left out of named services too: its data cannot be read either way", async () => {
      const skipped: string[] = [];
      const list = await createCatalogReader(oddApi()).read({ kind: "services", query: { names: ["web", ODD[0]!] } }, undefined, (s) => skipped.push(s));
      assert.equal(list.length, 2);
      assert.deepEqual(skipped, [ODD[0]]);
    });

    it("a 400 that is not about the name (a bad filter) still fails the read", async () => {
      const badFilter = new CtsError("CONSUL_BAD_REQUEST", "usage", "bad filter", { detail: { status: 400, reply: "Failed to create boolean expression evaluator" } });
      const api = oddApi((service) => refusedServiceName(badFilter, service) ?? badFilter);
      await assert.rejects(createCatalogReader(api).read({ kind: "services", query: { regexp: "", filter: "nonsense" } }, undefined, () => assert.fail("not a skip")), /bad filter/);
    });
  });
});
