import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { completePackageJson, newPackageJson } from "../../src/cli/init-package.ts";
import { OWN_PACKAGE } from "../../src/version.ts";

describe("the package.json `cts init` writes", () => {
  it("depends on this version of cdktf-sync and the cdktf and provider versions cts is built with", () => {
    const pkg = JSON.parse(newPackageJson("/home/me/My Sync"));
    assert.equal(pkg.name, "my-sync");
    assert.equal(pkg.type, "module");
    assert.equal(pkg.dependencies["cdktf-sync"], `^${OWN_PACKAGE.version}`);
    assert.equal(pkg.dependencies.cdktf, OWN_PACKAGE.dependencies.cdktf);
    assert.equal(pkg.dependencies["@cdktf/provider-local"], OWN_PACKAGE.devDependencies["@cdktf/provider-local"]);
    assert.match(pkg.scripts.test, /node --import tsx --test/);
    assert.ok(pkg.devDependencies.typescript && pkg.devDependencies.tsx && pkg.devDependencies["@types/node"]);
  });

  it("completes an existing package.json without changing anything already in it", () => {
    const before = { name: "mine", dependencies: { "cdktf-sync": "file:../cdktf-sync-0.1.0.tgz", cdktf: "0.21.0" }, scripts: { test: "vitest" } };
    const { text, added, warnings } = completePackageJson(JSON.stringify(before, null, 4));
    const after = JSON.parse(text);
    assert.equal(after.dependencies["cdktf-sync"], "file:../cdktf-sync-0.1.0.tgz");
    assert.equal(after.scripts.test, "vitest", "the user's test script stays");
    assert.ok(added.includes("type") && added.includes("dependencies.@cdktf/provider-local") && added.includes("scripts.typecheck"));
    assert.ok(!added.includes("dependencies.cdktf") && !added.includes("scripts.test"));
    assert.deepEqual(warnings, []);
    assert.match(text, /^\{\n {4}"name"/, "keeps the file's indentation");
    assert.deepEqual(completePackageJson(text).added, [], "a second run adds nothing");
  });

  it("warns instead of switching a CommonJS package to ESM", () => {
    const { added, warnings } = completePackageJson(JSON.stringify({ type: "commonjs" }));
    assert.ok(!added.includes("type"));
    assert.match(warnings[0]!, /"type": "commonjs".*Set "type": "module"/);
  });
});
