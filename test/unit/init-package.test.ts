import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { completePackageJson, newPackageJson, NPM_INIT_TEST } from "../../src/cli/init-package.ts";
import { scaffold } from "../../src/cli/init.ts";
import { OWN_PACKAGE } from "../../src/version.ts";

describe("the package.json `cts init` writes", () => {
  it("depends on this version of cdktf-sync and the cdktf and provider versions cts is built with", () => {
    const pkg = JSON.parse(newPackageJson("/home/me/My Sync"));
    assert.equal(pkg.name, "my-sync");
    assert.equal(pkg.type, "module");
    assert.equal(pkg.dependencies["cdktf-sync"], `^${OWN_PACKAGE.version}`);
    assert.equal(pkg.dependencies.cdktf, OWN_PACKAGE.dependencies.cdktf);
    assert.equal(pkg.dependencies["@cdktf/provider-local"], OWN_PACKAGE.devDependencies["@cdktf/provider-local"]);
    assert.match(pkg.scripts.test, /node --import tsx --import cdktf-sync\/register --test/, "tests load provider bindings lazily, as cts does");
    assert.ok(pkg.devDependencies.typescript && pkg.devDependencies.tsx && pkg.devDependencies["@types/node"]);
  });

  it("completes an existing package.json without changing anything already in it", () => {
    const before = { name: "mine", dependencies: { "cdktf-sync": "file:../cdktf-sync-0.1.0.tgz", cdktf: "0.21.0" }, scripts: { test: "vitest" } };
    const { text, added, changed, problem } = completePackageJson(JSON.stringify(before, null, 4));
    const after = JSON.parse(text);
    assert.equal(after.dependencies["cdktf-sync"], "file:../cdktf-sync-0.1.0.tgz");
    assert.equal(after.scripts.test, "vitest", "the user's test script stays");
    assert.ok(added.includes("type") && added.includes("dependencies.@cdktf/provider-local") && added.includes("scripts.typecheck"));
    assert.ok(!added.includes("dependencies.cdktf") && !added.includes("scripts.test"));
    assert.deepEqual(changed, []);
    assert.equal(problem, undefined);
    assert.match(text, /^\{\n {4}"name"/, "keeps the file's indentation");
    assert.deepEqual(completePackageJson(text).added, [], "a second run adds nothing");
  });

  it("turns what `npm init -y` writes into a project whose tsc and npm test pass, and says what it changed", () => {
    const npmInit = { name: "np", version: "1.0.0", description: "", main: "index.js", scripts: { test: NPM_INIT_TEST }, keywords: [], author: "", license: "ISC", type: "commonjs" };
    const { text, changed, problem } = completePackageJson(JSON.stringify(npmInit, null, 2));
    const after = JSON.parse(text);
    assert.equal(problem, undefined);
    assert.equal(after.type, "module");
    assert.equal(after.scripts.test, "node --import tsx --import cdktf-sync/register --test test/*.test.ts");
    assert.deepEqual(changed, [
      '"type": "commonjs" → "module" (npm init\'s default; cdktf-sync, cts.config.ts and the tasks are ES modules)',
      'scripts.test: npm init\'s placeholder → "node --import tsx --import cdktf-sync/register --test test/*.test.ts"',
    ]);
  });

  it("leaves a CommonJS package with JavaScript files alone and says the exact change to make", () => {
    const before = JSON.stringify({ type: "commonjs", scripts: { test: NPM_INIT_TEST } });
    const { text, added, changed, problem } = completePackageJson(before, ["index.js", "lib/a.js"]);
    assert.equal(text, before);
    assert.deepEqual([added, changed], [[], []]);
    assert.match(problem!, /"type": "commonjs" and index\.js, lib\/a\.js would change meaning.*Set "type": "module" in package\.json \(rename those CommonJS files to \.cjs\), then run `cts init` again/);
  });
});

describe("cts init in a project that has a config", () => {
  it("adds the new service's task to the config cts init wrote, once", async () => {
    const dir = await mkdtemp(join(tmpdir(), "cts-init-"));
    try {
      const lines: string[] = [];
      await scaffold(dir, { service: "web" }, (l) => lines.push(l));
      await scaffold(dir, { service: "api" }, (l) => lines.push(l));
      const config = await readFile(join(dir, "cts.config.ts"), "utf8");
      assert.match(config, /^import \{ WebMembersTask \} from "\.\/tasks\/web-members\.ts";\nimport \{ ApiMembersTask \} from "\.\/tasks\/api-members\.ts";$/m);
      assert.match(config, /^ {2}tasks: \[new WebMembersTask\(\), new ApiMembersTask\(\)\],$/m);
      assert.ok(lines.some((l) => /^updated \S*cts\.config\.ts: added ApiMembersTask to tasks$/.test(l)), lines.join("\n"));
      await scaffold(dir, { service: "api" }, (l) => lines.push(l));
      assert.equal(await readFile(join(dir, "cts.config.ts"), "utf8"), config, "a second run changes nothing");
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("prints the lines to add when the config is the user's own", async () => {
    const dir = await mkdtemp(join(tmpdir(), "cts-init-"));
    try {
      const own = `import { defineConfig } from "cdktf-sync";\nimport { all } from "./tasks/index.ts";\nexport default defineConfig({ tasks: all });\n`;
      await writeFile(join(dir, "cts.config.ts"), own);
      const lines: string[] = [];
      await scaffold(dir, { service: "api" }, (l) => lines.push(l));
      assert.equal(await readFile(join(dir, "cts.config.ts"), "utf8"), own);
      assert.ok(lines.includes('  import { ApiMembersTask } from "./tasks/api-members.ts";'), lines.join("\n"));
      assert.ok(lines.includes("  tasks: [..., new ApiMembersTask()],"), lines.join("\n"));
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
