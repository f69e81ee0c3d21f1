import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { initHash, initInputs } from "../../src/terraform/init-hash.ts";

const doc = (extra: Record<string, unknown> = {}) => ({
  terraform: {
    backend: { consul: { path: "consul-terraform-sync/terraform", gzip: true } },
    required_providers: { local: { source: "hashicorp/local", version: ">= 2.0" } },
  },
  resource: { local_file: { a: { filename: "a.txt", content: "one" } } },
  ...extra,
});
const hash = (d: unknown, files?: Record<string, string>) => initHash(JSON.stringify(d), files);

describe("init hash", () => {
  it("ignores resource content, provider settings and key order", () => {
    const changed = doc({ provider: { local: {} } });
    (changed.resource.local_file.a as any).content = "two";
    const reordered = { resource: doc().resource, terraform: { required_providers: doc().terraform.required_providers, backend: doc().terraform.backend } };
    assert.equal(hash(doc({ provider: { local: {} } })), hash(changed));
    assert.equal(hash(doc()), hash(reordered));
  });

  it("changes when the backend changes", () => {
    const d = doc();
    d.terraform.backend.consul.path = "elsewhere";
    assert.notEqual(hash(doc()), hash(d));
  });

  it("changes when required providers change", () => {
    const d = doc();
    (d.terraform.required_providers as any).null = { source: "hashicorp/null" };
    assert.notEqual(hash(doc()), hash(d));
  });

  it("changes when a resource brings in a provider nobody declared", () => {
    assert.notEqual(hash(doc()), hash(doc({ data: { null_data_source: { x: {} } } })));
  });

  it("changes with a module's source or version but not its inputs", () => {
    const m = (source: string, version: string, services: string) => doc({ module: { web: { source, version, services } } });
    assert.equal(hash(m("org/mod/x", "1.0.0", "a")), hash(m("org/mod/x", "1.0.0", "b")));
    assert.notEqual(hash(m("org/mod/x", "1.0.0", "a")), hash(m("org/mod/x", "1.1.0", "a")));
    assert.notEqual(hash(m("org/mod/x", "1.0.0", "a")), hash(m("org/mod/y", "1.0.0", "a")));
  });

  it("reads providers implied by a provider meta-argument and by extra .tf.json files", () => {
    const aliased = doc({ resource: { local_file: { a: { provider: "other.alias" } } } });
    assert.deepEqual((initInputs(aliased) as any).providers, ["local", "other"]);
    const extra = { "extra.tf.json": JSON.stringify({ resource: { null_resource: { n: {} } } }) };
    assert.notEqual(hash(doc()), hash(doc(), extra));
    assert.equal(hash(doc()), hash(doc(), { "terraform.tfvars.json": '{"a":1}' }));
  });

  it("treats any change to an extra HCL file as an init input", () => {
    assert.notEqual(hash(doc(), { "x.tf": "a" }), hash(doc(), { "x.tf": "b" }));
  });
});
