import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { parseFilter, type FilterEntry } from "../../src/consul/filter.ts";
import { filterEntryOf } from "../../src/synth/snapshot.ts";

/** Entry a: prod-tagged with meta env=prod on node n1 (rack r1); entry b: bare, critical, on n2. */
const a = filterEntryOf({ name: "web", id: "a", tags: ["prod", "x"], meta: { env: "prod" }, port: 80, address: "10.1.1.1", node: "n1", nodeAddress: "10.0.0.1", nodeDatacenter: "dc1", nodeMeta: { rack: "r1" } });
const b = filterEntryOf({ name: "web", id: "b", node: "n2", nodeAddress: "10.0.0.2", nodeDatacenter: "dc1", status: "critical" });

const ids = (filter: string, entries: FilterEntry[] = [a, b]) => {
  const f = parseFilter(filter);
  return entries.filter((e) => f.matches(e)).map((e) => e.Service.ID);
};
const unsupported = (filter: string, pattern: RegExp) =>
  assert.throws(() => parseFilter(filter), (e: any) => e.code === "FILTER_UNSUPPORTED" && pattern.test(e.message) && e.message.includes(filter));

describe("the Consul filter evaluator", () => {
  it("matches strings with ==, !=, contains, in, matches and their negations", () => {
    assert.deepEqual(ids('Service.ID == "a"'), ["a"]);
    assert.deepEqual(ids("Service.ID != a"), ["b"]);
    assert.deepEqual(ids('Node.Address contains ".2"'), ["b"]);
    assert.deepEqual(ids('"0.1" in Node.Address'), ["a"]);
    assert.deepEqual(ids('Service.ID matches "^[ab]$"'), ["a", "b"]);
    assert.deepEqual(ids('Service.Service not matches "(?i)^WEB$"'), []);
    assert.deepEqual(ids("Service.ID == `a`"), ["a"]);
    assert.deepEqual(ids('Service.ID == "\\u0061"'), ["a"]);
  });

  it("tests membership in lists and keys in maps, and emptiness of both", () => {
    assert.deepEqual(ids('Service.Tags contains "prod"'), ["a"]);
    assert.deepEqual(ids("prod in Service.Tags"), ["a"]);
    assert.deepEqual(ids('"prod" not in Service.Tags'), ["b"]);
    assert.deepEqual(ids("env in Service.Meta"), ["a"]);
    assert.deepEqual(ids("Service.Tags is empty"), ["b"]);
    assert.deepEqual(ids("Node.Meta is not empty"), ["a"]);
  });

  it("treats a missing map key as Consul does: ==, in and is-not-empty fail, every other operator holds", () => {
    assert.deepEqual(ids('Service.Meta.env == "prod"'), ["a"]);
    assert.deepEqual(ids('Service.Meta.env != "prod"'), ["b"]);
    assert.deepEqual(ids('Service.Meta.env == ""'), []);
    assert.deepEqual(ids('Service.Meta.env matches "zzz"'), ["b"]);
    assert.deepEqual(ids('Service.Meta.env not contains "p"'), ["b"]);
    assert.deepEqual(ids('Service.Meta["env"] == prod'), ["a"]);
    assert.deepEqual(ids('Node.Meta.rack == "r1"'), ["a"]);
  });

  it("compares the port as an integer, quoted or not", () => {
    assert.deepEqual(ids("Service.Port == 80"), ["a"]);
    assert.deepEqual(ids('Service.Port == "80"'), ["a"]);
    assert.deepEqual(ids("Service.Port != 80"), ["b"]);
    unsupported("Service.Port == abc", /'abc' is not an integer/);
  });

  it("holds a Checks selector when any check holds, as go-bexpr walks a list", () => {
    assert.deepEqual(ids('Checks.Status == "critical"'), ["b"]);
    assert.deepEqual(ids('Checks.Status != "passing"'), ["b"]);
    assert.deepEqual(ids("Checks is empty"), []);
    assert.deepEqual(ids("Checks.ServiceID == a"), ["a"]);
  });

  it("gives an instance its node's checks (a passing serfHealth by default) and its service's, as Consul lists them", () => {
    assert.deepEqual(filterEntryOf({ name: "web", id: "w", node: "n" }).Checks, [
      { Node: "n", CheckID: "serfHealth", Name: "Serf Health Status", Status: "passing", ServiceID: "", ServiceName: "" },
      { Node: "n", CheckID: "service:w", Name: "Service 'web' check", Status: "passing", ServiceID: "w", ServiceName: "web" },
    ]);
    const e = filterEntryOf({ name: "web", id: "w", node: "n", nodeMaintenance: true, maintenance: true, checks: [{ status: "warning" }, { name: "HTTP", status: "passing" }] });
    assert.deepEqual(
      e.Checks.map((c) => `${c.CheckID}/${c.Name}/${c.Status}`),
      ["_node_maintenance/Node Maintenance Mode/critical", "serfHealth/Serf Health Status/passing", "_service_maintenance:w/Service Maintenance Mode/critical", "service:w:1/Service 'web' check/warning", "service:w:2/HTTP/passing"],
    );
    assert.deepEqual(ids('Checks.CheckID == "serfHealth"'), ["a", "b"]);
    assert.deepEqual(ids('Checks.Status == "passing"'), ["a", "b"]);
    assert.deepEqual(ids('Checks.Name == "Serf Health Status" and Checks.ServiceID == ""'), ["a", "b"]);
  });

  it("reads a maintenance instance as Consul's critical maintenance check", () => {
    const m = filterEntryOf({ name: "web", id: "m", status: "maintenance" });
    assert.deepEqual(ids('Checks.Status == "critical"', [m]), ["m"]);
  });

  it("applies not, and, or with bexpr's precedence and parentheses", () => {
    assert.deepEqual(ids("Service.ID == a or Service.ID == b and Service.Port == 80"), ["a"]);
    assert.deepEqual(ids("(Service.ID == a or Service.ID == b) and Service.Port == 0"), ["b"]);
    assert.deepEqual(ids("not Service.ID == a"), ["b"]);
    assert.deepEqual(ids("not not Service.ID == a"), ["a"]);
    assert.deepEqual(ids("Node.Node == n1 and not (Service.Tags contains x)"), []);
    assert.deepEqual(ids("Service.ID==a"), ["a"]);
  });

  it("refuses, naming it, a selector it cannot evaluate instead of passing the instance", () => {
    unsupported("Service.Weights.Passing == 1", /selector 'Service\.Weights\.Passing' is not supported/);
    unsupported("Checks.Output contains x", /selector 'Checks\.Output' is not supported/);
    unsupported("Service.Namespace == default", /selector 'Service\.Namespace'/);
  });

  it("refuses the operators Consul refuses for a field", () => {
    unsupported('Service.Tags == "prod"', /operator '==' cannot be used on 'Service\.Tags'/);
    unsupported("Service.Address is empty", /operator 'is empty' cannot be used on 'Service\.Address'/);
    unsupported('Service.Tags matches "p"', /operator 'matches'/);
    unsupported('Service.Port contains "8"', /operator 'in'/);
  });

  it("refuses syntax errors and regular expressions it would read differently from Go", () => {
    unsupported("Service.Port > 10", /expected an operator/);
    unsupported("Service.ID == a AND Service.Port == 80", /unexpected 'AND/);
    unsupported('(Service.ID == "a"', /unmatched parenthesis/);
    unsupported('Service.ID == "a', /unterminated string/);
    // bexpr ends a double-quoted string at the first quote: Consul refuses an escaped one too.
    unsupported('Service.ID == "a\\"b"', /invalid escape/);
    unsupported("Service.ID == 1a", /invalid number literal/);
    unsupported('Service.ID matches "a\\\\z"', /RE2 syntax/);
    unsupported('Service.ID matches "(?P<n>a)"', /RE2 syntax/);
  });
});
