import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { HealthEntry } from "../../src/consul/client.ts";
import {
  aggregateStatus,
  decodeKvValue,
  toCatalogServices,
  toKvPairs,
  toServiceInstance,
  toServiceInstances,
  withUserMeta,
} from "../../src/consul/convert.ts";

function entry(over: { node?: Partial<HealthEntry["Node"]>; service?: Partial<HealthEntry["Service"]>; checks?: HealthEntry["Checks"] } = {}): HealthEntry {
  return {
    Node: { ID: "node-uuid", Node: "n1", Address: "10.0.0.1", Datacenter: "dc1", TaggedAddresses: { lan: "10.0.0.1" }, Meta: { rack: "a" }, ...over.node },
    Service: { ID: "web-1", Service: "web", Kind: "", Tags: ["b", "a"], Address: "10.0.0.9", Meta: { v: "1" }, Port: 80, Namespace: "default", ...over.service },
    Checks: over.checks === undefined ? [{ CheckID: "serfHealth", Status: "passing" }] : over.checks,
  };
}

describe("toServiceInstance (CTS protocol v0)", () => {
  it("maps every field", () => {
    assert.deepEqual(toServiceInstance(entry(), { team: "x" }), {
      id: "web-1",
      name: "web",
      kind: "",
      address: "10.0.0.9",
      port: 80,
      meta: { v: "1" },
      tags: ["a", "b"],
      namespace: "default",
      status: "passing",
      node: "n1",
      nodeId: "node-uuid",
      nodeAddress: "10.0.0.1",
      nodeDatacenter: "dc1",
      nodeTaggedAddresses: { lan: "10.0.0.1" },
      nodeMeta: { rack: "a" },
      ctsUserDefinedMeta: { team: "x" },
    });
  });

  it("falls back to the node address when the service has none", () => {
    assert.equal(toServiceInstance(entry({ service: { Address: "" } })).address, "10.0.0.1");
    assert.equal(toServiceInstance(entry({ service: { Address: undefined } })).address, "10.0.0.1");
  });

  it("gives {} and [] for nil maps and tags, and empty strings for absent optional fields", () => {
    const i = toServiceInstance(
      entry({
        service: { Tags: null, Meta: null, Kind: undefined, Namespace: undefined, Port: undefined },
        node: { TaggedAddresses: null, Meta: null, ID: undefined, Datacenter: undefined },
      }),
    );
    assert.deepEqual(i.tags, []);
    assert.deepEqual(i.meta, {});
    assert.deepEqual(i.nodeTaggedAddresses, {});
    assert.deepEqual(i.nodeMeta, {});
    assert.deepEqual(i.ctsUserDefinedMeta, {});
    assert.equal(i.kind, "");
    assert.equal(i.namespace, "");
    assert.equal(i.nodeId, "");
    assert.equal(i.nodeDatacenter, "");
    assert.equal(i.port, 0);
  });

  it("keeps the service kind (connect-proxy)", () => {
    assert.equal(toServiceInstance(entry({ service: { Kind: "connect-proxy" } })).kind, "connect-proxy");
  });

  it("copies maps with their keys in byte order, so equal instances serialize to equal JSON", () => {
    const a = toServiceInstance(entry({ service: { Meta: { b: "2", a: "1" } }, node: { Meta: { z: "", y: "" } } }));
    const b = toServiceInstance(entry({ service: { Meta: { a: "1", b: "2" } }, node: { Meta: { y: "", z: "" } } }));
    assert.deepEqual(Object.keys(a.meta), ["a", "b"]);
    assert.equal(JSON.stringify(a), JSON.stringify(b));
  });

  it("keeps a meta key named __proto__ as data, not as the map's prototype", () => {
    const meta = JSON.parse('{"__proto__":"x","a":"1"}') as Record<string, string>;
    const i = toServiceInstance(entry({ service: { Meta: meta } }));
    assert.deepEqual(Object.keys(i.meta), ["__proto__", "a"]);
    assert.equal(Object.getPrototypeOf(i.meta), Object.prototype);
  });

  it("does not share maps with the Consul entry", () => {
    const e = entry();
    const i = toServiceInstance(e);
    i.meta.v = "changed";
    i.tags.push("z");
    assert.equal(e.Service.Meta!.v, "1");
    assert.deepEqual(e.Service.Tags, ["b", "a"]);
  });
});

describe("aggregateStatus", () => {
  const c = (CheckID: string, Status: string) => ({ CheckID, Status });
  it("is passing with no checks or only passing checks", () => {
    assert.equal(aggregateStatus(null), "passing");
    assert.equal(aggregateStatus([]), "passing");
    assert.equal(aggregateStatus([c("a", "passing"), c("b", "passing")]), "passing");
  });
  it("takes the worst: critical > warning > passing", () => {
    assert.equal(aggregateStatus([c("a", "passing"), c("b", "warning")]), "warning");
    assert.equal(aggregateStatus([c("a", "warning"), c("b", "critical"), c("c", "passing")]), "critical");
  });
  it("is maintenance when a service or node maintenance check is present, whatever else", () => {
    assert.equal(aggregateStatus([c("a", "passing"), c("_service_maintenance:web-1", "critical")]), "maintenance");
    assert.equal(aggregateStatus([c("b", "critical"), c("_node_maintenance", "critical")]), "maintenance");
  });
  it("is empty for an unknown check status, as Consul's AggregatedStatus", () => {
    assert.equal(aggregateStatus([c("a", "bogus")]), "");
  });
});

describe("toServiceInstances", () => {
  it("sorts by node, then id (byte order)", () => {
    const list = toServiceInstances([
      entry({ node: { Node: "n2" }, service: { ID: "a" } }),
      entry({ node: { Node: "n1" }, service: { ID: "b" } }),
      entry({ node: { Node: "n1" }, service: { ID: "B" } }),
      entry({ node: { Node: "n1" }, service: { ID: "a" } }),
    ]);
    assert.deepEqual(
      list.map((i) => `${i.node}/${i.id}`),
      ["n1/B", "n1/a", "n1/b", "n2/a"],
    );
  });

  it("sets user metadata on every instance (withUserMeta)", () => {
    const list = withUserMeta(toServiceInstances([entry(), entry({ service: { ID: "web-2" } })]), { owner: "ops" });
    assert.ok(list.every((i) => i.ctsUserDefinedMeta.owner === "ops"));
  });
});

describe("toCatalogServices", () => {
  it("sorts names and each service's tags; nil tags become []", () => {
    const out = toCatalogServices({ web: ["z", "a"], consul: null, api: [] });
    assert.deepEqual(Object.keys(out), ["api", "consul", "web"]);
    assert.deepEqual(out, { api: [], consul: [], web: ["a", "z"] });
  });
});

describe("KV conversion", () => {
  it("maps full keys to UTF-8 values; a key without a value maps to an empty string", () => {
    assert.deepEqual(
      toKvPairs([
        { Key: "app/b", Value: "ünïcode" },
        { Key: "app/", Value: null },
        { Key: "app/a", Value: "1" },
      ]),
      { "app/": "", "app/a": "1", "app/b": "ünïcode" },
    );
  });

  it("decodes Consul's raw base64 values as UTF-8", () => {
    assert.equal(decodeKvValue(Buffer.from("héllo ${x}").toString("base64")), "héllo ${x}");
    assert.equal(decodeKvValue(null), "");
  });
});
